//! burn 0.22's `#[derive(Module)]` for the burn 0.21 facade: a struct with no backend parameter
//! gets burn 0.21's `Module<Backend>`, `AutodiffModule<Backend>` and `HasAutodiffModule<Backend>`
//! (`Backend` = 0.21's `Dispatch`, its own inner backend), plus the display and `Clone` impls both
//! derives emit. The generated code names the facade `burn`, as its dependents do.
//!
//! Fields are classified as burn 0.22's derive does: a field is a module unless it is a primitive
//! (or a std container of primitives) or marked `#[module(skip)]`; those are carried along as is.
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::quote;
use syn::{Data, DeriveInput, Fields, Index, Member, Type};

/// burn 0.21 implements `Record` for tuples of at most this many records.
const MAX_RECORD_TUPLE: usize = 10;

#[proc_macro_derive(Module, attributes(module))]
pub fn module_derive(input: TokenStream) -> TokenStream {
    let ast = syn::parse_macro_input!(input as DeriveInput);
    expand(&ast).unwrap_or_else(syn::Error::into_compile_error).into()
}

struct Field {
    member: Member,
    /// The name visitors see (`enter_module`) and display prints: the field name, or its index.
    name: String,
    ty: Type,
    is_module: bool,
}

fn expand(ast: &DeriveInput) -> syn::Result<Tokens> {
    if !ast.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &ast.generics,
            "burn-facade's Module derive takes no generic parameters",
        ));
    }
    let Data::Struct(data) = &ast.data else {
        return Err(syn::Error::new_spanned(
            &ast.ident,
            "burn-facade's Module derive supports structs only",
        ));
    };
    let fields = parse_fields(&data.fields)?;
    let name = &ast.ident;
    let container_type = format!("Struct:{name}");
    let upstream = quote!(burn::module::upstream);
    let backend = quote!(burn::Backend);
    let modules: Vec<&Field> = fields.iter().filter(|f| f.is_module).collect();

    let moved = |m: &Member| quote!(self.#m);

    let num_params = modules.iter().map(|f| {
        let m = &f.member;
        quote!(+ #upstream::Module::<#backend>::num_params(&self.#m))
    });
    let visit = modules.iter().map(|f| {
        let (m, field_name) = (&f.member, &f.name);
        quote! {
            visitor.enter_module(#field_name, #container_type);
            #upstream::Module::<#backend>::visit(&self.#m, visitor);
            visitor.exit_module(#field_name, #container_type);
        }
    });
    let collect_devices = modules.iter().map(|f| {
        let m = &f.member;
        quote!(let devices = #upstream::Module::<#backend>::collect_devices(&self.#m, devices);)
    });
    let map = build(
        &fields,
        &mut |f| {
            let (m, field_name) = (&f.member, &f.name);
            quote!({
                mapper.enter_module(#field_name, #container_type);
                let module = #upstream::Module::<#backend>::map(self.#m, mapper);
                mapper.exit_module(#field_name, #container_type);
                module
            })
        },
        &moved,
    );
    let to_device = build(
        &fields,
        &mut |f| {
            let m = &f.member;
            quote!(#upstream::Module::<#backend>::to_device(self.#m, device))
        },
        &moved,
    );
    let fork = build(
        &fields,
        &mut |f| {
            let m = &f.member;
            quote!(#upstream::Module::<#backend>::fork(self.#m, device))
        },
        &moved,
    );
    let valid = build(
        &fields,
        &mut |f| {
            let m = &f.member;
            quote!(#upstream::AutodiffModule::<#backend>::valid(&self.#m))
        },
        &|m| quote!(::core::clone::Clone::clone(&self.#m)),
    );
    let from_inner = build(
        &fields,
        &mut |f| {
            let m = &f.member;
            quote!(#upstream::AutodiffModule::<#backend>::from_inner(module.#m))
        },
        &|m| quote!(module.#m),
    );
    let cloned = |m: &Member| quote!(::core::clone::Clone::clone(&self.#m));
    let clone = build(&fields, &mut |f| cloned(&f.member), &cloned);

    // The record: a tuple of the module fields' records (nested past 10), `EmptyRecord` for none.
    let record_vars: Vec<_> = (0..modules.len())
        .map(|i| syn::Ident::new(&format!("record_{i}"), Span::call_site()))
        .collect();
    let (record_type, into_record, load_record);
    if modules.is_empty() {
        record_type = quote!(#upstream::EmptyRecord);
        into_record = quote!(#upstream::EmptyRecord::new());
        load_record = quote!(let _ = record; self);
    } else {
        record_type = nest(modules.iter().map(|f| {
            let ty = &f.ty;
            quote!(<#ty as #upstream::Module<#backend>>::Record)
        }));
        into_record = nest(modules.iter().map(|f| {
            let m = &f.member;
            quote!(#upstream::Module::<#backend>::into_record(self.#m))
        }));
        let pattern = nest(record_vars.iter().map(|v| quote!(#v)));
        let mut vars = record_vars.iter();
        let loaded = build(
            &fields,
            &mut |f| {
                let (m, var) = (&f.member, vars.next());
                quote!(#upstream::Module::<#backend>::load_record(self.#m, #var))
            },
            &moved,
        );
        load_record = quote!(let #pattern = record; #loaded);
    }

    let content = fields.iter().map(|f| {
        let (m, field_name) = (&f.member, &f.name);
        if f.is_module {
            quote!(.add(#field_name, &self.#m))
        } else {
            quote!(.add_debug_attribute(#field_name, &self.#m))
        }
    });
    let struct_name = name.to_string();
    let module_display = if has_custom_display(&ast.attrs)? {
        quote!()
    } else {
        quote!(impl burn::module::ModuleDisplay for #name {})
    };

    Ok(quote! {
        impl #upstream::Module<#backend> for #name {
            type Record = #record_type;

            fn load_record(self, record: Self::Record) -> Self {
                #load_record
            }

            fn into_record(self) -> Self::Record {
                #into_record
            }

            fn num_params(&self) -> usize {
                0 #(#num_params)*
            }

            fn visit<Visitor: #upstream::ModuleVisitor<#backend>>(&self, visitor: &mut Visitor) {
                #(#visit)*
            }

            fn map<Mapper: #upstream::ModuleMapper<#backend>>(self, mapper: &mut Mapper) -> Self {
                #map
            }

            fn collect_devices(&self, devices: #upstream::Devices<#backend>) -> #upstream::Devices<#backend> {
                #(#collect_devices)*
                devices
            }

            fn to_device(self, device: &<#backend as burn::tensor::backend::BackendTypes>::Device) -> Self {
                #to_device
            }

            fn fork(self, device: &<#backend as burn::tensor::backend::BackendTypes>::Device) -> Self {
                #fork
            }
        }

        // `Dispatch` is its own inner backend: the inner module is the module itself.
        impl #upstream::AutodiffModule<#backend> for #name {
            type InnerModule = #name;

            fn valid(&self) -> Self::InnerModule {
                #valid
            }

            fn from_inner(module: Self::InnerModule) -> Self {
                #from_inner
            }
        }

        impl #upstream::HasAutodiffModule<#backend> for #name {
            type TrainModule = #name;
        }

        impl ::core::fmt::Display for #name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let formatted = burn::module::ModuleDisplay::format(self, ::core::default::Default::default());
                write!(f, "{}", formatted)
            }
        }

        impl burn::module::ModuleDisplayDefault for #name {
            fn content(&self, mut content: burn::module::Content) -> Option<burn::module::Content> {
                content.set_top_level_type(#struct_name) #(#content)* .optional()
            }

            fn num_params(&self) -> usize {
                #upstream::Module::<#backend>::num_params(self)
            }
        }

        impl ::core::clone::Clone for #name {
            fn clone(&self) -> Self {
                #clone
            }
        }

        #module_display
    })
}

/// `Self { field: value, .. }` in declaration order (struct expressions evaluate in the order
/// written, so visits and maps keep burn's field order); also right for tuple and unit structs.
fn build(fields: &[Field], module: &mut dyn FnMut(&Field) -> Tokens, carried: &dyn Fn(&Member) -> Tokens) -> Tokens {
    let inits = fields.iter().map(|f| {
        let m = &f.member;
        let value = if f.is_module { module(f) } else { carried(m) };
        quote!(#m: #value)
    });
    quote!(Self { #(#inits),* })
}

fn parse_fields(fields: &Fields) -> syn::Result<Vec<Field>> {
    let mut parsed = Vec::new();
    for (index, field) in fields.iter().enumerate() {
        let (member, name) = match &field.ident {
            Some(ident) => (Member::Named(ident.clone()), ident.to_string()),
            None => (Member::Unnamed(Index::from(index)), index.to_string()),
        };
        let skip = is_skipped(field)?;
        if skip && last_segment_is(&field.ty, "Param") {
            return Err(syn::Error::new_spanned(
                field,
                "Fields of type 'Param' should not be marked as 'skip'. Use a 'Tensor' instead.",
            ));
        }
        let is_module = !(skip || is_primitive_type(&field.ty));
        parsed.push(Field {
            member,
            name,
            ty: field.ty.clone(),
            is_module,
        });
    }
    Ok(parsed)
}

fn is_skipped(field: &syn::Field) -> syn::Result<bool> {
    let mut skip = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else {
                Err(meta.error("Unsupported module attribute"))
            }
        })?;
    }
    Ok(skip)
}

fn has_custom_display(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    let mut custom = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("custom_display") {
                custom = true;
                Ok(())
            } else {
                Err(meta.error("unsupported attribute"))
            }
        })?;
    }
    Ok(custom)
}

/// `(a, b, ...)`, as tuples of tuples when there are more than burn 0.21's tuple records hold.
fn nest(items: impl IntoIterator<Item = Tokens>) -> Tokens {
    let mut items: Vec<Tokens> = items.into_iter().collect();
    while items.len() > MAX_RECORD_TUPLE {
        items = items.chunks(MAX_RECORD_TUPLE).map(|chunk| quote!((#(#chunk,)*))).collect();
    }
    quote!((#(#items,)*))
}

fn last_segment_is(ty: &Type, name: &str) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == name))
}

/// burn 0.22's rule (burn-derive 0.22.1, module/codegen_struct.rs): primitives, and std
/// containers, tuples, arrays and references holding only primitives, are not modules.
fn is_primitive_type(ty: &Type) -> bool {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "String",
    ];
    const CONTAINERS: &[&str] = &[
        "Option",
        "Result",
        "Vec",
        "Box",
        "Arc",
        "Weak",
        "HashMap",
        "BTreeMap",
        "HashSet",
        "BTreeSet",
        "VecDeque",
        "LinkedList",
        "BinaryHeap",
        "PhantomData",
        "Cell",
        "RefCell",
        "Mutex",
        "RwLock",
    ];
    match ty {
        Type::Path(path) => {
            let Some(segment) = path.path.segments.last() else { return false };
            let ident = segment.ident.to_string();
            if PRIMITIVES.contains(&ident.as_str()) {
                return true;
            }
            match &segment.arguments {
                syn::PathArguments::AngleBracketed(args) if CONTAINERS.contains(&ident.as_str()) => args
                    .args
                    .iter()
                    .all(|arg| matches!(arg, syn::GenericArgument::Type(inner) if is_primitive_type(inner))),
                _ => false,
            }
        }
        Type::Tuple(tuple) => tuple.elems.iter().all(is_primitive_type),
        Type::Array(array) => is_primitive_type(&array.elem),
        Type::Reference(reference) => is_primitive_type(&reference.elem),
        Type::Ptr(ptr) => is_primitive_type(&ptr.elem),
        Type::Paren(paren) => is_primitive_type(&paren.elem),
        Type::Slice(slice) => is_primitive_type(&slice.elem),
        _ => false,
    }
}
