"""p08a: burn's LSTM and GRU draw every gate weight and bias from XavierNormal(gain 1) with each
gate Linear's fans; PyTorch's draw them all from U(±1/√hidden_size)."""

import math
from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, DefaultsDiffer, Experiment, Matches, Mismatches, SourceRef

# Kurtosis of each law: a sample std of n values has relative standard error √((κ-1)/(4n)).
KURTOSIS = {"uniform": 9 / 5, "xavier-normal": 3.0}


def parameters(out, dump: str, select: str) -> list[dict]:
    """The per-parameter statistics a dump's metadata lists (comma-joined, one per parameter),
    with the dump's hidden size and gain; `select`: "all", "weight" or "bias"."""
    meta = read_dump(out / f"{dump}.safetensors").metadata
    names = meta["params"].split(",")
    columns = {key: meta[key].split(",") for key in ("is_bias", "fan_in", "fan_out", "numel", "std", "ks")}
    rows = []
    for i, name in enumerate(names):
        row = {"dump": dump, "name": name, "hidden_size": int(meta["hidden_size"]), "gain": meta.get("gain", "None"),
               "is_bias": columns["is_bias"][i] == "true", **{k: float(columns[k][i]) for k in ("fan_in", "fan_out", "numel", "std", "ks")}}
        if select == "all" or (select == "bias") == row["is_bias"]:
            rows.append(row)
    return rows


def law_std(row: dict, law: str) -> float:
    """The std the law gives this parameter: U(±1/√H) has 1/√(3H); XavierNormal(gain) has
    gain·√(2/(fan_in+fan_out)), the fans of the Linear holding the parameter (its bias too)."""
    if law == "uniform":
        return 1 / math.sqrt(3 * row["hidden_size"])
    return float(row["gain"]) * math.sqrt(2 / (row["fan_in"] + row["fan_out"]))


@dataclass(frozen=True)
class StdFits(Claim):
    """In each of `dumps`, every selected parameter's sample std s is the std σ of `law` (from the
    dump's hidden size, fans and gain) within `sigmas` standard errors of a sample std of its size:
    |s/σ - 1| <= sigmas·√((κ-1)/(4n)), κ the law's kurtosis."""

    id: str
    text: str
    dumps: tuple[str, ...]
    law: str
    select: str = "all"
    sigmas: float = 6.0

    def observe(self, record, out):
        rows = [row for dump in self.dumps for row in parameters(out, dump, self.select)]
        ratios = np.array([row["std"] / law_std(row, self.law) for row in rows])
        errors = np.array([math.sqrt((KURTOSIS[self.law] - 1) / (4 * row["numel"])) for row in rows])
        z = np.abs(ratios - 1) / errors
        expected = f"{len(rows)} {self.select} tensors: |s/σ_{self.law} - 1| <= {self.sigmas:g} SE"
        observed = f"s/σ in [{ratios.min():.4f}, {ratios.max():.4f}], worst {z.max():.2f} SE"
        return expected, observed, bool(rows) and bool(np.all(z <= self.sigmas))


@dataclass(frozen=True)
class KsTest(Claim):
    """In each of `dumps`, every selected parameter's Kolmogorov–Smirnov distance D to U(±1/√H)
    is within the critical value √(-ln(α/2)/2)/√n (the uniform fits), or beyond it for every one
    (`reject=True`: the law is not U(±1/√H))."""

    id: str
    text: str
    dumps: tuple[str, ...]
    select: str = "all"
    reject: bool = False
    alpha: float = 1e-6

    def observe(self, record, out):
        rows = [row for dump in self.dumps for row in parameters(out, dump, self.select)]
        c = math.sqrt(-math.log(self.alpha / 2) / 2)
        scaled = np.array([row["ks"] * math.sqrt(row["numel"]) for row in rows])  # √n·D against c
        word = ">" if self.reject else "<="
        expected = f"{len(rows)} {self.select} tensors: √n·D {word} {c:.4f} (α={self.alpha:g})"
        observed = f"√n·D in [{scaled.min():.4f}, {scaled.max():.4f}]"
        ok = bool(np.all(scaled > c)) if self.reject else bool(np.all(scaled <= c))
        return expected, observed, bool(rows) and ok


def magnitude(record) -> str:
    """The std ratio burn/PyTorch over each model's weights and biases, per model (their ranges differ)."""
    spans = []
    for rnn, name in (("lstm", "LSTM"), ("gru", "GRU")):
        torch, port = record.program("torch", rnn).metadata, record.program("burn", f"{rnn}-port").metadata
        ratios = [float(b) / float(t) for t, b in zip(torch["std"].split(","), port["std"].split(","))]
        spans.append(f"{name} ×{min(ratios):.2f}–{max(ratios):.2f}")
    return "权重和偏置的 std：" + "，".join(spans)


EXPERIMENT = Experiment(
    id="p08a",
    title="LSTM/GRU 默认用 XavierNormal 初始化，偏置也是，分布比 PyTorch 宽",
    mainline="init and weight layout",
    kind="silent",
    symptoms=("init-differs",),
    related=("p08", "p32", "p33"),
    torch_variants=("lstm", "gru"),
    burn_variants=("lstm-port", "lstm-fixed", "gru-port", "gru-fixed"),
    comparisons=(("torch-lstm", "burn-lstm-fixed"), ("torch-lstm", "burn-lstm-port"),
                 ("torch-gru", "burn-gru-fixed"), ("torch-gru", "burn-gru-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/rnn/lstm/lstm_module.rs", "LstmConfig", 'default = "Initializer::XavierNormal{gain:1.0}"'),
        SourceRef("burn-nn", "src/modules/rnn/gru.rs", "GruConfig", 'default = "Initializer::XavierNormal{gain:1.0}"'),
        SourceRef("burn-nn", "src/modules/rnn/gate_controller.rs", "GateController::new", "initializer: initializer.clone(),"),
        SourceRef("burn-nn", "src/modules/linear.rs", "LinearConfig::init", "Some(self.initializer.init_with("),
        SourceRef("burn-nn", "src/initializer.rs", "Initializer::init_tensor", "let std = *gain * self.xavier_std(fan_in, fan_out);"),
        SourceRef("burn-nn", "src/initializer.rs", "Initializer::xavier_std", "(2.0 / (fan_in + fan_out) as f64).sqrt()"),
    ),
    magnitude=magnitude,
    claims=(
        DefaultsDiffer("lstm-initializer-differs", "LSTM 的默认初始化两边不同（burn 读配置字段，PyTorch 读 `reset_parameters` 的源码）",
                       "torch-lstm", "burn-lstm-port", "initializer",
                       "LSTM 的初始化（`LstmConfig` 的 `initializer` / `nn.LSTM.reset_parameters`）"),
        DefaultsDiffer("gru-initializer-differs", "GRU 的默认初始化也不同",
                       "torch-gru", "burn-gru-port", "initializer",
                       "GRU 的初始化（`GruConfig` 的 `initializer` / `nn.GRU.reset_parameters`）"),
        StdFits("torch-std-uniform", "PyTorch：每个门的权重和偏置，std 都是 U(±1/√H) 的 1/√(3H)",
                ("torch-lstm", "torch-gru"), "uniform"),
        KsTest("torch-ks-uniform", "PyTorch：每个张量和 U(±1/√H) 的 KS 距离都在临界值以内",
               ("torch-lstm", "torch-gru")),
        Accepts("burn-lstm-port-runs", "burn 的默认 LSTM 正常建出来，不报错", "burn", "lstm-port"),
        StdFits("port-weight-xavier", "burn 默认：权重的 std 是 Xavier 的 √(2/(fan_in+fan_out))，fan 取所在 Linear 的",
                ("burn-lstm-port", "burn-gru-port"), "xavier-normal", select="weight"),
        StdFits("port-bias-xavier", "burn 默认：偏置也按同一个 Xavier 公式画（fan 取所在 Linear 的），不是 0，也不是 U(±1/√H)",
                ("burn-lstm-port", "burn-gru-port"), "xavier-normal", select="bias"),
        KsTest("port-ks-rejects", "burn 默认：每个权重张量和 U(±1/√H) 的 KS 距离都超出临界值",
               ("burn-lstm-port", "burn-gru-port"), select="weight", reject=True),
        Mismatches("negative-control", "burn-lstm-port 对 torch-lstm 报 MISMATCH（超出 1/√H 的比例）",
                   "torch-lstm", "burn-lstm-port"),
        Mismatches("gru-negative-control", "burn-gru-port 对 torch-gru 报 MISMATCH", "torch-gru", "burn-gru-port"),
        StdFits("fixed-std-uniform", "改后：burn 每个张量的 std 都是 1/√(3H)", ("burn-lstm-fixed", "burn-gru-fixed"), "uniform"),
        KsTest("fixed-ks-uniform", "改后：burn 每个张量和 U(±1/√H) 的 KS 距离都在临界值以内",
               ("burn-lstm-fixed", "burn-gru-fixed")),
        Matches("fix-matches", "burn-lstm-fixed（`Initializer::Uniform`）和 torch-lstm 一致：没有值超出 1/√H",
                "torch-lstm", "burn-lstm-fixed"),
        Matches("gru-fix-matches", "burn-gru-fixed 和 torch-gru 一致", "torch-gru", "burn-gru-fixed"),
    ),
)
