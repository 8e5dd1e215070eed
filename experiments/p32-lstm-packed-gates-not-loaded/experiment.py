"""p32: a PyTorch LSTM's state_dict, saved as safetensors, read with burn-store's SafetensorsStore
and PyTorchToBurnAdapter. PyTorch packs the four gates ([i, f, g, o] rows of `weight_ih_l0`,
`weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`); burn's Lstm has one GateController (two Linears) per
gate, and nothing maps one onto the other. The load fails, or, with allow_partial(true), every gate
silently keeps its initial value. Splitting the packed rows by hand works only in PyTorch's gate
order, which is not the order burn declares its gate fields."""

from pita_lab.experiment import (
    Accepts,
    DefaultsDiffer,
    Experiment,
    KeptInitial,
    Loaded,
    Matches,
    Mismatches,
    Panics,
    SourceRef,
)


def magnitude(record) -> str:
    worst = record.comparison("torch-ref", "burn-partial").result.worst
    return f"默认加载报错；allow_partial 时输出差 {worst:.2g}"


EXPERIMENT = Experiment(
    id="p32",
    title="PyTorch 的 LSTM 把四个门拼在一起，burn-store 加载不上，allow_partial 时门全是初始值",
    mainline="save/load PyTorch weights",
    kind="panic",
    symptoms=("wrong-after-load", "panic"),
    related=("p31", "p30", "p33"),
    reports=("tracel-ai/burn#4043", "tracel-ai/burn#1632"),
    torch_variants=("ref",),
    burn_variants=("port", "partial", "guard", "declared-order", "fixed"),
    comparisons=(("torch-ref", "burn-partial"), ("torch-ref", "burn-declared-order"), ("torch-ref", "burn-fixed")),
    sources=(
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "Lstm", "pub input_gate: GateController,"),
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "Lstm", "pub output_gate: GateController,"),
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "Lstm", "pub cell_gate: GateController,"),
        SourceRef("burn-nn", "src/modules/rnn/gate_controller.rs", "GateController", "pub input_transform: Linear,"),
        SourceRef("burn-nn", "src/modules/rnn/gate_controller.rs", "GateController::gate_product",
                  "self.input_transform.forward(input) + self.hidden_transform.forward(hidden)"),
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "Lstm::forward_iter",
                  "cell_state = forget_values * cell_state + input_values * candidate_cell_values;"),
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "Lstm::forward_iter",
                  "hidden_state = output_values * self.hidden_activation.forward(cell_state.clone());"),
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", 'if module_type == module_names::LINEAR && param == "weight"'),
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::apply_to",
                  "if !self.get_allow_partial() && !result.missing.is_empty() {"),
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "LstmConfig", "pub batch_first: bool,"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-saves", "PyTorch 用 `save_file` 把 state_dict 存成 safetensors，并运行模型", "torch", "ref"),
        Panics("default-load-fails", "带 `PyTorchToBurnAdapter` 的 `SafetensorsStore` 默认加载失败：文件里没有 burn 各个门的参数名",
               "burn", "port", "Tensor not found"),
        Accepts("partial-load-runs", "`allow_partial(true)` 后加载「成功」，模型能运行", "burn", "partial"),
        Loaded("partial-loads-nothing", "`allow_partial(true)`：什么都没应用上，burn 各个门的参数全部缺失，文件里拼在一起的张量全部没用上",
               "partial", everything=False),
        KeptInitial("partial-keeps-init", "`allow_partial(true)`：每个门的每个参数加载后和加载前逐字节相同，都还是初始值", "partial"),
        Mismatches("negative-control", "burn-partial 对 torch-ref 报 MISMATCH", "torch-ref", "burn-partial"),
        Panics("guard-panics", "`assert_fully_loaded` 拦下部分加载",
               "burn", "guard", "parameters were not loaded and keep their initial values"),
        Loaded("declared-order-loads-everything", "按 burn 声明门字段的顺序（i, f, o, g）拆开，每个参数都加载上了，`assert_fully_loaded` 也通过",
               "declared-order"),
        Mismatches("gate-order-matters", "按 burn 声明门字段的顺序拆：burn-declared-order 对 torch-ref 报 MISMATCH",
                   "torch-ref", "burn-declared-order"),
        Loaded("fix-loads-everything", "按 PyTorch 的门顺序（i, f, g, o）拆开后，每个参数都能加载", "fixed"),
        KeptInitial("fix-replaces-every-parameter", "改好的加载换掉了每一个参数，没有一个还是初始值", "fixed", kept=False),
        Matches("fix-matches", "burn-fixed 和 torch-ref 一致：每个时间步的隐状态和最后的 (h, c)", "torch-ref", "burn-fixed"),
        DefaultsDiffer("defaults-differ", "默认的 `batch_first` 两边不同：PyTorch 的 LSTM 默认输入是 [seq, batch, in]，burn 的是 [batch, seq, in]",
                       "torch-ref", "burn-fixed", "batch_first", "LSTM 的 `batch_first`（`LstmConfig` / `nn.LSTM`）",
                       maps=("LSTM.batch_first", "Lstm.batch_first")),
    ),
)
