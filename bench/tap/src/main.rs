//! Benchmark: the cost of `pita::record::tap` when no recorder listens, the case of every
//! forward pass but the recorded one.
//!
//! In one process, on burn's Flex backend (CPU):
//! - the raw cost of one `tap` call, against the same loop without it, and of a `tap!` whose
//!   name is formatted (`layers.{i}.attn`), which formats nothing when no recorder listens;
//! - a forward pass of a small MLP (3 Linears, 2 ReLUs, batch 8) with a tap after each layer (5
//!   taps), against the same forward without taps: per-call ns and the ratio;
//! - for reference, what a tap costs while a recorder listens (a handle clone and a name).
//!
//! Each figure is the median of `--repeat` runs, the two sides of a comparison alternating.
//!
//!     cargo run --release -p pita-bench-tap [-- --calls N --forwards M --repeat R]
use std::hint::black_box;
use std::time::Instant;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor};
use pita::record::{tap, Recorder};

#[derive(Module, Debug)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
    act: Relu,
}

impl Mlp {
    fn new(device: &Device) -> Self {
        Mlp {
            fc1: LinearConfig::new(16, 32).init(device),
            fc2: LinearConfig::new(32, 32).init(device),
            fc3: LinearConfig::new(32, 4).init(device),
            act: Relu::new(),
        }
    }

    #[inline(never)]
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.act.forward(self.fc1.forward(x));
        let x = self.act.forward(self.fc2.forward(x));
        self.fc3.forward(x)
    }

    /// The same forward, each module's output tapped as a port would.
    #[inline(never)]
    fn forward_tapped(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.fc1.forward(x);
        tap("fc1", &x);
        let x = self.act.forward(x);
        tap("act", &x);
        let x = self.fc2.forward(x);
        tap("fc2", &x);
        let x = self.act.forward(x);
        tap("act", &x);
        let x = self.fc3.forward(x);
        tap("fc3", &x);
        x
    }
}

struct Args {
    calls: usize,
    forwards: usize,
    repeat: usize,
}

fn args() -> Args {
    let mut args = Args { calls: 50_000_000, forwards: 20_000, repeat: 9 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{flag} needs a number"));
        match flag.as_str() {
            "--calls" => args.calls = value,
            "--forwards" => args.forwards = value,
            "--repeat" => args.repeat = value,
            other => panic!("unknown option {other}; options: --calls N --forwards M --repeat R"),
        }
    }
    args
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Nanoseconds per iteration of `body`, run `n` times.
fn per_call(n: usize, mut body: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..n {
        body();
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let args = args();
    let device = Device::flex();
    let model = Mlp::new(&device);
    let x = Tensor::<2>::ones([8, 16], &device);
    let small = Tensor::<1>::ones([4], &device);
    println!("pita bench/tap ({} build), burn Flex, median of {} runs", if cfg!(debug_assertions) { "debug" } else { "release" }, args.repeat);

    // 1. One tap call, not listening, against the same loop without it.
    let (mut tapped, mut empty) = (Vec::new(), Vec::new());
    for _ in 0..args.repeat {
        tapped.push(per_call(args.calls, || tap(black_box("fc1"), black_box(&small))));
        empty.push(per_call(args.calls, || {
            black_box("fc1");
            black_box(&small);
        }));
    }
    let (tapped, empty) = (median(tapped), median(empty));
    println!("tap, not listening:    {tapped:8.2} ns per call; the loop without it {empty:.2} ns ({} calls)", args.calls);
    println!("  tap's own cost:      {:8.2} ns per call", (tapped - empty).max(0.0));

    // 1b. tap! with a name built at run time, not listening: the name is never formatted.
    let mut formatted = Vec::new();
    for _ in 0..args.repeat {
        formatted.push(per_call(args.calls, || {
            let i = black_box(3usize);
            pita::tap!("layers.{i}.attn", black_box(&small));
        }));
    }
    println!("tap!(\"layers.{{i}}.attn\"), not listening: {:8.2} ns per call", median(formatted));

    // 2. A forward pass with 5 taps against the same forward without them.
    for _ in 0..args.forwards / 10 {
        black_box(model.forward_tapped(x.clone()));
        black_box(model.forward(x.clone()));
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..args.repeat {
        without.push(per_call(args.forwards, || drop(black_box(model.forward(black_box(x.clone()))))));
        with.push(per_call(args.forwards, || drop(black_box(model.forward_tapped(black_box(x.clone()))))));
    }
    // The noise: the interquartile range of the runs of one side, relative to their median.
    let spread = |runs: &[f64]| {
        let mut sorted = runs.to_vec();
        sorted.sort_by(f64::total_cmp);
        (sorted[3 * sorted.len() / 4] - sorted[sorted.len() / 4]) / sorted[sorted.len() / 2]
    };
    let noise = spread(&without).max(spread(&with));
    let (with, without) = (median(with), median(without));
    println!("forward without taps:  {without:8.0} ns per call ({} calls)", args.forwards);
    println!("forward with 5 taps:   {with:8.0} ns per call");
    println!("  ratio with/without:  {:8.4} (noise: runs of one side spread {:.1}%, interquartile)", with / without, 100.0 * noise);

    // 3. For reference: a tap while a recorder listens (the recorded forward only).
    let listening_calls = 10_000;
    let mut listening = Vec::new();
    for _ in 0..args.repeat {
        let mut recorder = Recorder::new();
        let guard = recorder.listen();
        listening.push(per_call(listening_calls, || tap(black_box("fc1"), black_box(&small))));
        drop(guard);
        black_box(recorder.execution_order().len());
    }
    println!("tap, listening:        {:8.0} ns per call ({listening_calls} calls)", median(listening));
}
