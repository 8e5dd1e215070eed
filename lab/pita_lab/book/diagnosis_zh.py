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
    远小于原来的误差，而且至少由两个非零元素得出：任意两个数都互为倍数，所以单个元素（比如 loss）
    只有在 `k` 是一个计数（至少为 2 的整数，或它的倒数：batch 大小、类别数、梯度累积步数）时才算
    scale，而且另一个张量也得显示同样的倍数。

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
    "slice_scale": """slice_scale：候选的每个切片都是参考的对应切片乘以它自己的倍数。

检测什么
    一组轴，倍数沿它们不变（`constant_along`），而跨过它们的每个切片（其余轴的一个下标：最后
    一个轴上的一行，也就是 `[batch, seq, hidden]` 激活里的一个 token；`[N, C, H, W]` 激活里的
    一个通道）满足 `candidate ≈ s × reference`，`s` 是这个切片自己的倍数，用最小二乘拟合。每个
    切片里剩下的误差都是该切片尺度上的舍入噪声（float32 和 float64 最多是它 RMS 的 64 个 ULP，
    float16 和 bfloat16 最多 4 个，和 `rounding` 的算法一样），各倍数之间的差大于这个噪声，
    一个公共倍数剩下的误差更大（那是 `scale`，报告的是它），而且每个倍数至少有 8 个采样到的
    非零元素作依据（`support`）。报告能拟合的切片数最少的那一组（逐通道的倍数也符合逐样本逐通道）。
    `min_factor`、`max_factor`、`median_factor`：倍数的范围；`slices`：拟合了多少个倍数；倍数都在 1
    的 5% 以内、而且最后一个轴上每行一个时，`hint` 指出是 LayerNorm 的 eps。

移植中为什么会出现
    归一化的 `eps` 不同：LayerNorm 把每一行除以 `sqrt(var + eps)`，换一个 `eps` 就把每一行乘上
    它自己的 `sqrt((var + eps) / (var + eps'))`，接近 1（在一个 BERT 式的移植里是每个 token
    0.9931 到 0.9964，burn 的 `LayerNormConfig` 默认 1e-5，BERT 用 1e-12）；BatchNorm 和
    GroupNorm 同理，按通道或按组。还有：逐通道的权重（BatchNorm 的 gamma、layer scale）加载错了
    或者没加载，只有一边按样本施加的 mask 或 loss 权重。

例子
    参考的行 `[1, 2, 3, …]` 和 `[4, 5, 6, …]`，候选的行 `[0.99, 1.98, 2.97, …]` 和
    `[3.988, 4.985, 5.982, …]`：倍数 0.99 和 0.997，沿第 1 轴不变。

怎么改
    对照两边归一化的 `eps`（`LayerNormConfig::with_epsilon`、`BatchNormConfig::with_epsilon`），
    再对照加载后的逐通道权重；倍数随样本变化时，查逐样本的权重和 mask。
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
    "block_permutation": """block_permutation：候选是参考沿某个轴的若干等大块换了顺序。

检测什么
    沿第 0 轴或最后一个轴（`axis`）的 `k` 个等大块（2、3 或 4 个，每块沿该轴至少两个下标宽）换了顺序：候选的第 i 块是
    参考的第 `permutation[i]` 块，而且几乎精确地重现数值（到 max|reference| 的 1e-6 以内，或
    atol 以内，和 `transpose` 一样）。张量的名字说明打包了什么时，给块起名（`layout`，`names`：
    参考里块的顺序）：PyTorch 的 GRU 在 `weight_ih_l<n>`、`weight_hh_l<n>`、`bias_ih_l<n>` 和
    `bias_hh_l<n>` 的第 0 轴上按 r|z|n 打包门，LSTM 按 i|f|g|o（k 为 3 和 4），
    `MultiheadAttention` 在 `in_proj_weight` 和 `in_proj_bias` 里按 q|k|v 打包。整块移动的行
    顺序在这里报告，不再作为 `permutation` 报告一次。

移植中为什么会出现
    burn 的 `Gru` 和 `Lstm` 每个门一个 Linear，`MultiHeadAttention` 每个投影一个；移植在拆开
    PyTorch 的打包张量来加载（或者把自己的打包起来比较）时用了另一种顺序，就把门换了：burn 的
    `Gru` 按 update、reset、new 列出它的门，而 PyTorch 的第一块是 reset 门 r。模型照样能跑、
    能训练，只有数值会暴露问题。

例子
    参考 `gru.weight_ih_l0` 的行是 r|z|n，候选的行是 z|r|n：permutation `[1, 0, 2]`，
    「gate blocks r and z swapped (GRU packs r|z|n along axis 0)」。

怎么改
    按张量布局给出的顺序拆分和打包（GRU r|z|n，LSTM i|f|g|o，q|k|v）：打包张量的第 i 块对应
    那里排第 i 的门或投影。
""",
    "block_transpose": """block_transpose：打包权重里的方块，全部或其中几块被转置了。

检测什么
    一个二维张量 `[k × H, H]`（k 为 2、3 或 4，H 至少为 2），沿第 0 轴的 k 个方块是参考的方块，
    其中一些（`transposed`）被转置了：候选的第 i 块是参考的第 `permutation[i]` 块，i 在
    `transposed` 里时是它的转置，而且几乎精确地重现数值（到 max|reference| 的 1e-6 以内，或 atol
    以内，和 `transpose` 一样）。每块单独匹配，所以既换了位置又转置了的块也是同一条结论；等于自身
    转置的块算作没有转置。块的名字和 `block_permutation` 的一样（`layout`，`names`）：GRU 的
    r|z|n、LSTM 的 i|f|g|o 在 `weight_hh_l<n>` 里（输入大小等于隐藏大小时 `weight_ih_l<n>` 也是），
    `MultiheadAttention` 的 q|k|v 在 `in_proj_weight` 里。整个方阵被转置是 `transpose`；块换了位置
    但没有一块转置是 `block_permutation`。

移植中为什么会出现
    burn 的 `Linear` 把权重存成 `[d_input, d_output]`，PyTorch 存成 `[out, in]`；把 PyTorch 打包的
    `weight_hh_l0` 拆给 burn 每个门的 Linear 时，每一块都要转置。那里每块都是方阵，所以忘了转置
    照样能加载，不报形状错误；只有一块转置错了也一样。输入权重在输入大小不同时不是方阵，错了会
    加载失败：只有隐藏权重会悄无声息地出错。

例子
    参考 `gru.weight_hh_l0` `[144, 48]`（r|z|n，H 为 48），候选里每个 48 × 48 的块都被转置：
    transposed `[0, 1, 2]`，「every gate block transposed (GRU packs r|z|n along axis 0)」。

怎么改
    拆打包张量时把每一块转置（第 i 个门的 burn Linear 用 `weight_hh_l0[i*H:(i+1)*H].T`），或者通过
    burn-store 的 `PyTorchToBurnAdapter` 加载，它会转置 Linear 权重。
""",
    "permutation": """permutation：候选按另一种顺序放着参考的值。

检测什么
    要么是单次交换以外的轴顺序（`axes`，例如 `[2, 1, 0]`），要么是参考的行（沿第 0 轴的切片）
    换了顺序（`rows`：候选的第 i 行是参考的第 `rows[i]` 行），比如打乱了的 batch。

移植中为什么会出现
    PyTorch 里 3 维张量的 `.T` 倒转所有轴，`permute` 用了另一个框架的布局（`[B, T, F]` 对
    `[T, B, F]`，NCHW 对 NHWC）；只有一边的数据加载器打乱顺序；头按另一种顺序堆叠（打包张量里
    整块移动的门或投影块是 `block_permutation`）。

例子
    参考的行 `[a, b, c]`，候选的行 `[b, c, a]`：rows `[1, 2, 0]`。

怎么改
    轴顺序不同时，比较或移植之前先 `permute` 成参考的布局；行顺序不同时，让两边按同样的顺序
    遍历数据（不打乱，或用相同的采样种子），或者按参考的顺序拆开堆叠的块。
""",
    "rows": """rows：不一致只出现在少数几行里，其余每一行都一致。

检测什么
    一个至少两个轴的张量，按容差判为不一致的元素全都落在少数几行里（第 0 轴的下标，每行至少两个
    元素），其余每一行都在容差以内：不一致的行最多占有值的行（任一边非零）的四分之一，这样每个
    不一致的行至少有三个一致的行作证据，而两边都是零的行什么也证明不了；每个不一致的行里，有值的
    采样元素至少一半不一致（整行，而不是零星几个元素）。`rows`：不一致的行（前 8 个），`count`：
    有几行，`share`：`count` 占张量行数的比例。按样本诊断的张量，行取自采样到的不一致元素，而且
    整个张量的不一致元素数必须装得进这些行。张量的名字像嵌入表（`embed`、`wte`、`wpe`），而且
    唯一不一致的那一行在参考里全是零时，`hint` 指出 `padding_idx`。行顺序（`permutation`）、
    转置了的块（`block_transpose`）和舍入噪声（`rounding`）说得比「在哪里」更多，报告的是它们。

移植中为什么会出现
    `nn.Embedding(padding_idx=p)` 让第 p 行保持为零：PyTorch 既不给它梯度，也不更新它；burn 的
    `Embedding` 没有这个选项，所以移植里 padding 那一行被训练了。还有：batch 里的某一个样本被
    另行处理（mask、长度、特殊 token），分类器权重里某一类的行、或者某个 token 的嵌入从别处加载。

例子
    参考 `grad/embed.weight` `[40, 32]` 的第 0 行全是零，候选的第 0 行不为零，其余各行相同：
    rows `[0]`，count 1，share 0.025，「the reference's row 0 is zero: an Embedding's padding_idx row」。

怎么改
    看这些行特殊在哪里：padding 下标（在 burn 里用 `pita::padding_idx::embedding_with_padding_idx`
    包住查表），样本的 mask 或长度，这些行代表的 token 或类别。
""",
    "rounding": """rounding：差异是舍入噪声，不是 bug。

检测什么
    要么整个张量只差最后一位上的几个单位（ULP；float32 和 float64 最多 64 个，float16 和
    bfloat16 最多 4 个：求和顺序、融合乘加、不同的归约树），对每个元素按它自身数值的 ULP 计，
    或者对最大的误差按张量尺度上的 ULP 计（`ulps_at_rms`：max|diff| 除以 ε × `rms`，`rms` 是
    参考在采样元素上的 RMS，ε 是较粗的 dtype 在 1 附近的间距）；要么一边逐元素等于另一边就近
    舍入到 float16、bfloat16 或 float32 的结果（至少四个元素不同，其余每个元素本来就是那种格式
    的值）：有一边被转换成或存成了更低的精度。只是恰好能用那种格式表示的值（比如整数）不算。
    张量的尺度取 RMS 而不是最大值：最大值由一个离群值单独决定（在 n 个元素的 RMS 里它只占
    1/√n 的分量），采样也可能漏掉它，而样本能很好地估计 RMS。接近 0 的元素自身的 ULP 很小，从
    较大的值带过来的噪声在那里是成千上万个 ULP（`ulps`），在张量尺度上却只有几个。

移植中为什么会出现
    matmul 和归约的求和顺序不同（burn 和 PyTorch 的循环分块不同），`mean` 算成 `sum/n` 对
    `sum*(1/n)`；一边把权重或激活转成 f16/bf16（混合精度，以半精度保存的 checkpoint），float64
    的参考对 float32 的移植。

例子
    参考 `0.0425`，候选 `0.042500019`（相差 5 ULP）：求和顺序带来的噪声。一个 RMS 为 1 的
    LayerNorm 输出，最大误差 1.06e-6 出现在值为 0.01 的元素上，是这个元素的 1,139 个 ULP，
    在张量尺度上是 9 个：同样是求和顺序带来的噪声。

怎么改
    ULP 级的噪声用 `--ulp N`（或小的 `--rtol`，或张量尺度上的 `--atol`）比较，这不是移植错误。f16/bf16 量级的差异，查清
    是哪一边做了转换，在相同精度下比较。
""",
}
