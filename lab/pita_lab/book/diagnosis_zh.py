"""The diagnosis rules' docs in Chinese, for the handbook's diagnosis reference (book/diagnosis.md):
kind -> the rule's docstring (pita/diagnose/<kind>.py) in Chinese, in the same layout (`kind：summary`,
then the sections of navigation.SECTIONS_ZH), read by `pita.diagnose.parse_rule_doc`. A rule without
its entry here fails `pita book build` and tests/lab/test_book_navigation.py."""

DIAGNOSIS_ZH = {
    "nan": """nan：一边是 NaN，另一边在同一位置是数。

检测什么
    只在一个张量里是 NaN、另一个张量同一位置不是 NaN 的元素：有多少个、在哪一边、第一个在哪
    （按样本诊断的张量：样本内的位置）。

移植中为什么会出现
    一边防了溢出、另一边没防（softplus 没有阈值，大 logits 的 `exp`），整行都被遮住的注意力
    （全是 -inf，softmax 得 NaN），对 0 或负数取 `log`，归一化里 `eps` 不同造成的 `0/0`。

例子
    参考 `[100.0]`，候选 `[nan]`（softplus 的梯度算成了 inf/inf）。

怎么改
    找到第一个产生 NaN 的运算（dump 中间结果，按顺序比较）；补上另一边有的保护（阈值、clamp、
    eps），或者显式处理边界情况。
""",
    "scale": """scale：候选的每个元素都是参考乘以同一个倍数。

检测什么
    一个不为 1 的倍数 `k`，使 `candidate ≈ k × reference` 逐元素成立，除以 `k` 之后剩下的误差
    远小于原来的误差。

移植中为什么会出现
    PyTorch 取平均的 loss 在移植里求了和：burn 的 `backward()` 用全 1 作根节点的种子，逐样本的
    loss 反传的是它们的和，每个梯度都大了 batch 倍。还有：学习率或 loss 权重按另一种约定搬过来，
    `reduction="sum"` 对 `"mean"`，dropout 少了 `1/(1-p)` 的缩放。

例子
    参考（torch，loss 取了 mean）`bias.grad [-0.65]`，候选（burn，没有 mean）`[-2.6]`：
    `candidate = 4 × reference`，4 是 dump 里记下的 batch 大小。

怎么改
    找到倍数从哪里进来。倍数等于 batch 大小时，在 `backward()` 之前用 `.mean()` 归约 loss
    （pita 的 `backward_scalar` 拒绝没有归约的 loss）。
""",
    "sign": """sign：候选是参考取反。

检测什么
    `candidate ≈ −reference` 逐元素成立，取反之后剩下的误差远小于原来的误差。

移植中为什么会出现
    原来最小化 `log p` 的 loss 搬成了 `-log p`（或者反过来），梯度用 `+` 而不是 `-` 更新，
    差的两项写反（`a - b` 写成 `b - a`），在一对对称的值上 `mask_where`/`torch.where` 的两个
    分支对调。

例子
    参考 `[0.5, -1.0, 2.0]`，候选 `[-0.5, 1.0, -2.0]`。

怎么改
    找到不同的减法或符号约定；逐项对照更新规则。
""",
    "offset": """offset：候选是参考加上同一个常数。

检测什么
    一个值 `v`，使 `candidate ≈ reference + v` 逐元素成立，减去 `v` 之后剩下的误差远小于原来的
    误差。

移植中为什么会出现
    偏置加了两次或者没加，归一化常数（`eps`、均值）只在一边用了，标签或下标差了一，padding 的
    值不同。

例子
    参考 `[0.1, 0.2, 0.3]`，候选 `[0.6, 0.7, 0.8]`：`candidate = reference + 0.5`。

怎么改
    找只在一边出现的加法项：偏置、`eps`、减均值。
""",
    "transpose": """transpose：候选是参考交换了两个轴。

检测什么
    两个轴 `i, j`，使 `candidate ≈ reference.swapaxes(i, j)`；形状相同时（方阵）也能发现，而这
    正是按形状的检查都拦不住的情形。`axes` 是把参考映射到候选的完整轴顺序。

移植中为什么会出现
    burn 的 `Linear` 把权重存成 `[d_input, d_output]`，PyTorch 的 `nn.Linear` 存成 `[out, in]`：
    不转置就拷贝的权重在方阵层上算出错的结果，只在非方阵层上才报形状错误。另外，burn 的
    `transpose()` 只交换最后两个轴，PyTorch 里 3 维张量的 `.T` 倒转全部轴。

例子
    参考 `[[1, 2], [3, 4]]`，候选 `[[1, 3], [2, 4]]`：axes `[1, 0]`。

怎么改
    手工拷贝权重时转置（`weight.transpose()`），或者通过 burn-store 的 `PyTorchToBurnAdapter`
    加载 PyTorch 权重，它会转置 Linear 权重。
""",
    "permutation": """permutation：候选按另一种顺序放着参考的值。

检测什么
    要么是单次交换以外的轴顺序（`axes`，例如 `[2, 1, 0]`），要么是参考的行（沿第 0 轴的切片）
    换了顺序（`rows`：候选的第 i 行是参考的第 `rows[i]` 行），比如打乱了的 batch。

移植中为什么会出现
    PyTorch 里 3 维张量的 `.T` 倒转所有轴，`permute` 用了另一个框架的布局（`[B, T, F]` 对
    `[T, B, F]`，NCHW 对 NHWC）；只有一边的数据加载器打乱顺序；门或头的块按另一种顺序堆叠
    （LSTM 的 i、f、g、o）。

例子
    参考的行 `[a, b, c]`，候选的行 `[b, c, a]`：rows `[1, 2, 0]`。

怎么改
    轴顺序不同时，比较或移植之前先 `permute` 成参考的布局；行顺序不同时，让两边按同样的顺序
    遍历数据（不打乱，或用相同的采样种子），或者按参考的顺序拆开堆叠的块。
""",
    "rounding": """rounding：差异是舍入噪声，不是 bug。

检测什么
    要么整个张量只差最后一位上的几个单位（ULP；float32 和 float64 最多 64 个，float16 和
    bfloat16 最多 4 个：求和顺序、融合乘加、不同的归约树），要么一边逐元素等于另一边就近舍入到
    float16、bfloat16 或 float32 的结果（至少四个元素不同，其余每个元素本来就是那种格式的值）：
    有一边被转换成或存成了更低的精度。只是恰好能用那种格式表示的值（比如整数）不算。

移植中为什么会出现
    matmul 和归约的求和顺序不同（burn 和 PyTorch 的循环分块不同），`mean` 算成 `sum/n` 对
    `sum*(1/n)`；一边把权重或激活转成 f16/bf16（混合精度，以半精度保存的 checkpoint），float64
    的参考对 float32 的移植。

例子
    参考 `0.0425`，候选 `0.042500019`（相差 8 ULP）：求和顺序带来的噪声。

怎么改
    ULP 级的噪声用 `--ulp N`（或小的 `--rtol`）比较，这不是移植错误。f16/bf16 量级的差异，查清
    是哪一边做了转换，在相同精度下比较。
""",
}
