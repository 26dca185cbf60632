"""Every word the figures show, in English and Simplified Chinese side by side: one table, looked up with t().

The page's own words (labels, explanations, status) are in ui/strings.py, the engine's refusals in model/errors.py;
all three are read by model/words.py's lookup.
"""
from __future__ import annotations

from model.words import LANGS, lookup  # noqa: F401  (LANGS: viz.LANGS)

# key: (English, Simplified Chinese). Placeholders are the same in both.
WORDS: dict[str, tuple[str, str]] = {
    "fate_chosen": ("chosen", "被选中"),
    "fate_kept": ("kept", "保留"),
    "fate_top_k": ("cut by top-k", "被 top-k 截掉"),
    "fate_top_p": ("cut by top-p", "被 top-p 截掉"),
    "fate_min_p": ("cut by min-p", "被 min-p 截掉"),
    "fate_greedy": ("not the argmax (greedy)", "不是最大值（贪心）"),

    "stage_repetition_penalty": ("repetition penalty", "重复惩罚"),
    "stage_temperature": ("temperature", "温度"),
    "stage_top_k": ("top-k", "top-k"),
    "stage_top_p": ("top-p", "top-p"),
    "stage_min_p": ("min-p", "min-p"),

    "cand_title": ("Next token (position {position}): the draw picks {token}", "下一个词元（位置 {position}）：抽取结果是 {token}"),
    "cand_title_forced": ("Next token (position {position}): you forced {token}", "位置 {position} 的下一个词元：你强制选了 {token}"),
    "cand_title_predict": ("Next token (position {position}): which will the draw pick?",
                           "下一个词元（位置 {position}）：抽取会选中哪一个？"),
    "cand_panel_draw_predict": ("The draw: where will u land?", "抽取：u 会落在哪里？"),
    "cand_panel_bars": ("Probability of each candidate", "每个候选词元的概率"),
    "cand_panel_draw": ("The draw: u = {u} lands on one token", "抽取：u = {u} 落在某一个词元上"),
    "cand_panel_greedy": ("T = 0: no draw, the most probable token is taken", "T = 0：不抽取，直接取概率最高的词元"),
    "cand_axis_prob": ("probability", "概率"),
    "cand_axis_cum": ("cumulative probability (draw order)", "累积概率（抽取顺序）"),
    "cand_legend_t1": ("outline: probability at T = 1", "空心框：T = 1 时的概率"),
    "cand_legend_after_top_p": ("running total before the top-p cut", "top-p 截断前的累积和"),
    "cand_u_line": ("u = {u}", "u = {u}"),
    "cand_top_p_line": ("top-p = {p}", "top-p = {p}"),
    "cand_others": ("all other tokens", "其余所有词元"),
    "cand_gap": ("… {n} more", "…… 另外 {n} 个"),
    "cand_subtitle": (
        "Not shown: {tail_t1} at T = 1, {tail_final} after the settings · entropy {h_t1} bits at T = 1 → {h_final} bits after · tokens kept: {kept}",
        "未显示部分：T = 1 时 {tail_t1}，设置后 {tail_final} · 熵：T = 1 时 {h_t1} 比特 → 设置后 {h_final} 比特 · 保留 {kept} 个词元",
    ),
    "cand_chosen_note": (
        "{token}: {prob} at T = 1 (log p = {logprob}), rank {rank}",
        "{token}：T = 1 时概率 {prob}（log p = {logprob}），排名 {rank}",
    ),

    "hover_id": ("id", "编号"),
    "hover_rank": ("rank", "排名"),
    "hover_logit": ("logit", "logit"),
    "hover_t1": ("at T = 1", "T = 1 时"),
    "hover_after": ("after {stage}", "{stage}之后"),
    "hover_final": ("final", "最终"),
    "hover_fate": ("fate", "结果"),
    "hover_segment": ("from {start} to {end} on the running total", "累积和上从 {start} 到 {end}"),

    "temp_title": ("Temperature reshapes the same logits", "温度改变同一组 logits 的形状"),
    "temp_subtitle": (
        "The same step at several temperatures; the other settings are held (top-p = {p}).",
        "同一步在不同温度下的样子；其他设置保持不变（top-p = {p}）。",
    ),
    "temp_panel": ("T = {t}", "T = {t}"),
    "temp_panel_greedy": ("T = 0 (greedy)", "T = 0（贪心）"),
    "temp_current": ("{panel} ← current", "{panel} ← 当前"),
    "temp_axis_prob": ("final probability", "最终概率"),
    "temp_axis_t": ("temperature T", "温度 T"),
    "temp_entropy": ("entropy (bits)", "熵（比特）"),
    "temp_nucleus": ("tokens kept (log scale)", "保留的词元数（对数刻度）"),
    "temp_entropy_panel": ("How spread out the choice is", "选择有多分散"),
    "temp_nucleus_panel": ("How many tokens can still be drawn", "还有多少词元可能被抽到"),
    "temp_current_line": ("current T = {t}", "当前 T = {t}"),

    "attn_title_head": (
        "Layer {layer}, head {head}: reads KV head {kv_head} (grouped-query attention, {group} query heads per KV head)",
        "第 {layer} 层，第 {head} 个头：读取第 {kv_head} 个 KV 头（分组查询注意力，每个 KV 头对应 {group} 个查询头）",
    ),
    "attn_title_mean": ("Layer {layer}, mean over {heads} heads", "第 {layer} 层，{heads} 个头的平均"),
    "attn_title_mha": (
        "Layer {layer}, head {head} (multi-head attention: its own KV head)",
        "第 {layer} 层，第 {head} 个头（多头注意力：有自己的 KV 头）",
    ),
    "attn_axis_query": ("query: the token that is looking (row)", "查询：正在“看”的词元（行）"),
    "attn_axis_key": ("key: the token looked at (column)", "键：被看的词元（列）"),
    "attn_axis_key_short": ("key (column)", "键（列）"),  # a phone's axis: the long title wrapped over its tick labels
    "attn_axis_query_short": ("query (row)", "查询（行）"),
    "attn_weight": ("weight", "权重"),
    "attn_future": ("future: masked (−∞ before softmax → weight 0)", "未来：被遮蔽（softmax 前设为 −∞ → 权重为 0）"),
    "attn_future_short": ("future", "未来"),
    "attn_window": ("outside the sliding window of {window}: masked", "在 {window} 的滑动窗口之外：被遮蔽"),
    "attn_newest": ("newest token (last row)", "最新的词元（最后一行）"),
    "attn_hover": (
        "query {qpos} {qtok}<br>key {kpos} {ktok}<br>weight {w}",
        "查询 {qpos} {qtok}<br>键 {kpos} {ktok}<br>权重 {w}",
    ),

    "gqa_title": (
        "Grouped-query attention: {heads} query heads share {kv_heads} KV heads (groups of {group})",
        "分组查询注意力：{heads} 个查询头共用 {kv_heads} 个 KV 头（每组 {group} 个）",
    ),
    "gqa_query": ("query head {h}", "查询头 {h}"),
    "gqa_kv": ("KV head {k}", "KV 头 {k}"),
    "gqa_row_query": ("query heads", "查询头"),
    "gqa_row_kv": ("KV heads (cached)", "KV 头（被缓存）"),
    "gqa_row_query_short": ("query", "查询头"),  # (a phone's, issue 47)
    "gqa_row_kv_short": ("KV<br>(cached)", "KV 头<br>（缓存）"),

    "kv_title": ("KV cache size as the text grows", "文本变长时 KV 缓存的大小"),
    "kv_subtitle": (
        "per token: 2 × {layers} layers × {kv_heads} KV heads × {head_dim} × {bpv} B ({dtype}, as this server runs it) = {per_token}",
        "每个词元：2 × {layers} 层 × {kv_heads} 个 KV 头 × {head_dim} × {bpv} B（{dtype}，本服务器运行时的精度）= {per_token}",
    ),
    "kv_axis_tokens": ("tokens in the cache", "缓存中的词元数"),
    "kv_axis_bytes": ("cache size ({unit})", "缓存大小（{unit}）"),
    "kv_keys": ("K (measured)", "K（实测）"),
    "kv_values": ("V (measured)", "V（实测）"),
    "kv_formula": ("formula", "公式"),
    "kv_prefill": ("prompt (prefill): {n} tokens", "提示词（预填充）：{n} 个词元"),
    "kv_hover": (
        "{tokens} tokens<br>measured {measured} (K {keys} + V {values})<br>formula {formula}",
        "{tokens} 个词元<br>实测 {measured}（K {keys} + V {values}）<br>公式 {formula}",
    ),

    "timing_title": ("Time per step: with a KV cache vs recomputing the whole prefix", "每一步的时间：使用 KV 缓存 vs 重新计算整个前缀"),
    "timing_subtitle": (
        "With a cache a step still reads all t keys and values: O(t). Without one it redoes the prefix: O(t²) attention.",
        "有缓存时，每一步仍要读取全部 t 个键和值：O(t)。没有缓存时要重算整个前缀：注意力为 O(t²)。",
    ),
    "timing_axis_len": ("tokens in the sequence", "序列中的词元数"),
    "timing_axis_ms": ("time per step (ms)", "每一步的时间（毫秒）"),
    "timing_cached": ("with KV cache", "使用 KV 缓存"),
    "timing_full": ("without cache (recompute prefix)", "不用缓存（重算前缀）"),
    "timing_hover": ("{n} tokens: {ms} ms", "{n} 个词元：{ms} 毫秒"),
    "timing_fit": ("fitted line, with KV cache: {slope} ms per 1,000 tokens", "拟合直线（使用 KV 缓存）：每千个词元 {slope} 毫秒"),
    "myth_logp_title": ("Beam search against sampling: log P and repeats", "束搜索与采样：log P 与重复"),
    "myth_logp_subtitle": ("log P: the sum of each token's log-probability, from one forward pass over the text",
                           "log P：对整段文本做一次前向计算，把每个词元的对数概率加起来"),
    "myth_logp_axis": ("log P (natural log; higher is likelier)", "log P（自然对数；越高越可能）"),
    "myth_beam": ("beam search (B = {width})", "束搜索（B = {width}）"),
    "myth_sampled": ("sampled", "采样"),
    "myth_bar_hover": ("{name}<br>log P = {logp}<br>{repeated} repeated token(s) of {n}",
                       "{name}<br>log P = {logp}<br>{n} 个词元中有 {repeated} 个重复"),

    "calc_title": ("KV cache size for different models and settings", "不同模型和设置下的 KV 缓存大小"),
    "calc_subtitle": (
        "bytes = 2 (K and V) × layers × KV heads × head dim × tokens × bytes per value × batch",
        "字节 = 2（K 和 V）× 层数 × KV 头数 × 头维度 × 词元数 × 每个值的字节数 × 批大小",
    ),
    "calc_axis": ("cache size ({unit})", "缓存大小（{unit}）"),

    "chips_title": (
        "Step {step} · rank {rank} · probability {prob} at T = 1",
        "第 {step} 步 · 排名 {rank} · T = 1 时概率 {prob}",
    ),
    "chips_forced": ("forced by you", "由你强制选择"),
    "chips_prompt": ("prompt token", "提示词中的词元"),
    "chips_legend": (
        "Grey outline: your prompt. Blue: written by the model, darker = the model found it more likely (T = 1). Dashed: forced by you. Click a token to go back to that step.",
        "灰色边框：你的提示词。蓝色：模型写出的词元，颜色越深表示模型认为它越可能（T = 1）。虚线框：由你强制选择。点击一个词元可回到那一步。",
    ),
    # --- chain rule and teacher forcing (viz/chain.py) ---
    "chain_title": ("The chain rule: P(text | prompt) is the product of every step's P(token)",
                    "链式法则：P(文本 | 提示词) 是每一步 P(词元) 的乘积"),
    "chain_subtitle": (
        "log P(text | prompt) = Σ log P(x_t | x_&lt;t) = {lp} nats ({bits} bits) over {n} tokens · perplexity = exp(−mean log P) = {ppl}: on average as unsure as a fair choice among {ppl} tokens",
        "log P(文本 | 提示词) = Σ log P(x_t | x_&lt;t) = {lp} 奈特（{bits} 比特），共 {n} 个词元 · 困惑度 = exp(−平均 log P) = {ppl}：平均而言，相当于在 {ppl} 个等可能的词元中做选择",
    ),
    "chain_subtitle_empty": ("No token generated yet: take a step to start the chain.", "还没有生成词元：先走一步，链条才开始。"),
    "chain_subtitle_2": (
        "Dark bars: what the model believes (T = 1, no cut). Light bars: the distribution the draw actually used (after temperature and cuts). Click a point to go back to that step.",
        "深色柱：模型本身的判断（T = 1，不截断）。浅色柱：抽取时实际使用的分布（经过温度和截断之后）。点击一个点可回到那一步。",
    ),
    "chain_t1": ("log P at T = 1 (the model)", "T = 1 时的 log P（模型本身）"),
    "chain_sampled": ("log P in what we drew from", "抽取所用分布中的 log P"),
    "chain_cum": ("running sum = log P(text so far)", "累积和 = log P(目前的文本)"),
    "chain_outside": ("forced from outside the kept set: probability 0 in what we drew from", "从保留集合之外强制选择：在抽取所用分布中概率为 0"),
    "chain_entropy": ("entropy at T = 1 (bits)", "T = 1 时的熵（比特）"),
    "chain_entropy_sampled": ("entropy of what we drew from", "抽取所用分布的熵"),
    "chain_fork": ("fork: entropy ≥ {bits} bits (mean + 1 SD of this text)", "分岔点：熵 ≥ {bits} 比特（本文本的平均值 + 1 个标准差）"),
    "chain_forced": ("forced by you", "由你强制选择"),
    "chain_axis_step": ("step (generated token)", "步（生成的词元）"),
    "chain_axis_logp": ("log P (nats)", "log P（奈特）"),
    "chain_axis_cum": ("running sum (nats)", "累积和（奈特）"),
    "chain_axis_entropy": ("entropy (bits)", "熵（比特）"),
    "chain_hover": (
        "<b>step {step}: {token}</b> · rank {rank}<br>log P at T = 1: {lp} (p = {p})<br>log P in what we drew from: {lps}<br>running sum: {cum}<br>entropy: {h} bits at T = 1, {hs} bits drawn from",
        "<b>第 {step} 步：{token}</b> · 排名 {rank}<br>T = 1 时 log P：{lp}（p = {p}）<br>抽取所用分布中 log P：{lps}<br>累积和：{cum}<br>熵：T = 1 时 {h} 比特，抽取所用分布 {hs} 比特",
    ),
    "tf_title": ("Training vs generation: one parallel pass scores every position (teacher forcing)",
                 "训练与生成：一次并行前向计算就给每个位置打分（教师强制）"),
    "tf_subtitle": (
        "{n} positions in one pass: {ms} ms on {threads} threads · training loss = mean −ln P = {loss} nats ({bits} bits) · perplexity = exp(loss) = {ppl}",
        "一次计算 {n} 个位置：{ms} 毫秒（{threads} 个线程）· 训练损失 = 平均 −ln P = {loss} 奈特（{bits} 比特）· 困惑度 = exp(损失) = {ppl}",
    ),
    "tf_subtitle_engine": (
        "{n} positions in one request to the engine (prompt_logprobs): {ms} ms · training loss = mean −ln P = {loss} nats ({bits} bits) · perplexity = exp(loss) = {ppl}",
        "向推理引擎发一次请求就算出 {n} 个位置（prompt_logprobs）：{ms} 毫秒 · 训练损失 = 平均 −ln P = {loss} 奈特（{bits} 比特）· 困惑度 = exp(损失) = {ppl}",
    ),
    "tf_same_logprobs": (
        "Largest log-probability difference from the steps' own requests: {diff}, float error only: under the causal mask, appending a token changes no earlier row.",
        "与各步自己的请求相比，对数概率的最大差：{diff}，只是浮点误差：在因果掩码下，追加一个词元不会改变之前的任何一行。",
    ),
    "tf_vs_steps": (
        "Generated one token at a time, its generated tokens took {serial} ms ({steps} steps; the prefill, itself one parallel pass, left out): {speedup}× this one pass",
        "逐个词元生成，生成的词元用了 {serial} 毫秒（{steps} 步；预填充本身是一次并行计算，不计入）：是这一次并行计算的 {speedup} 倍",
    ),
    "tf_same_logits": (
        "Largest logit difference from the stepwise decoding: {diff}, float error only: under the causal mask, appending a token changes no earlier row.",
        "与逐步解码的最大 logit 差：{diff}，只是浮点误差：在因果掩码下，追加一个词元不会改变之前的任何一行。",
    ),
    "tf_prob": ("P(actual next token) at T = 1", "T = 1 时 P(实际的下一个词元)"),
    "tf_top1": (
        "the model's top-1, where it is another token ({n} positions)",
        "模型的第一选择，当它是另一个词元时（{n} 个位置）",
    ),
    "tf_prompt": ("prompt positions (scored too)", "提示词的位置（同样被打分）"),
    "tf_generated": ("generated →", "生成的 →"),
    "tf_in_prompt": ("in the prompt", "在提示词中"),
    "tf_mean_line": (
        "mean = training loss: {loss} nats (perplexity {ppl})",
        "平均值 = 训练损失：{loss} 奈特（困惑度 {ppl}）",
    ),
    "tf_axis_prob": ("P(actual token)", "P(实际词元)"),
    "tf_axis_ce": ("−ln P (nats)", "−ln P（奈特）"),
    "tf_axis_position": ("position of the predicted token", "被预测词元的位置"),
    "tf_hover": (
        "<b>position {position}: {token}</b><br>P = {p} · rank {rank}<br>model's top-1: {top1} ({top1_p})<br>cross-entropy {ce} nats ({ce_bits} bits)",
        "<b>位置 {position}：{token}</b><br>P = {p} · 排名 {rank}<br>模型的第一选择：{top1}（{top1_p}）<br>交叉熵 {ce} 奈特（{ce_bits} 比特）",
    ),
    "gltr_top1": ("top 1", "第 1 名"),
    "gltr_top": ("top {k}", "前 {k} 名"),
    "gltr_beyond": ("beyond {k}", "{k} 名之后"),
    "gltr_first": ("first token: nothing before it to predict it from", "第一个词元：前面没有可用来预测它的内容"),
    "gltr_title": ("position {position} · rank {rank} · P = {p} · model's top-1: {top1} ({top1_p})",
                   "位置 {position} · 排名 {rank} · P = {p} · 模型的第一选择：{top1}（{top1_p}）"),
    "gltr_legend": ("Each token is shaded by its rank among the model's predictions at that position, in GLTR's buckets (top 10, 100, 1,000, beyond); the darker, the more surprising:",
                    "每个词元的底色表示它在该位置模型预测中的排名，分组与 GLTR 相同（前 10、前 100、前 1,000、之后）；颜色越深越出乎模型意料："),
    "gltr_summary": ("{n} tokens scored · log P(text) = {lp} nats · perplexity = exp(−mean log P) = {ppl}",
                     "共给 {n} 个词元打分 · log P(文本) = {lp} 奈特 · 困惑度 = exp(−平均 log P) = {ppl}"),

    # --- speculative decoding and paged KV (viz/speculative.py, viz/paged.py) ---
    "spec_title": (
        "Speculative decoding: {tokens} tokens in {passes} forward passes ({tpp} tokens per pass)",
        "推测解码：{passes} 次前向传播生成了 {tokens} 个词元（每次 {tpp} 个）",
    ),
    "spec_subtitle": (
        "Prompt-lookup draft of up to {k} tokens · {rate} of drafts kept · {saved} passes saved · every row is one real forward pass of {model} over the last token and the drafts",
        "用提示词查找起草，每轮最多 {k} 个词元 · 草稿保留率 {rate} · 省下 {saved} 次前向传播 · 每一行都是 {model} 对最后一个词元和草稿做的一次真实前向传播",
    ),
    "spec_subtitle_greedy": (
        "Greedy (T = 0): p is 1 for the target's own choice and 0 for any other token, so a draft is kept exactly when it is what the target would write.",
        "贪心（T = 0）：目标模型自己的选择 p = 1，其他词元 p = 0，所以草稿只有在与目标模型本来要写的词元相同时才被保留。",
    ),
    "spec_subtitle_sampling": (
        "Sampling: the draft is copied, not drawn (q = 1), so draft x is kept with probability p(x); after a rejection the target draws from p without x.",
        "采样：草稿是复制来的而不是抽取的（q = 1），所以草稿 x 以概率 p(x) 被保留；被拒绝后，目标模型从去掉 x 的 p 中抽取。",
    ),
    # the engine's own speculative counts (viz/speculative_engine.py)
    "spec_engine_title": (
        "On the engine: {tokens} tokens, {passes}{steps} verifying passes, {tpp} per verifying pass (k = {k})",
        "推理引擎：写出 {tokens} 个词元，{passes}{steps} 次验证计算，每次验证 {tpp} 个（k = {k}）",
    ),
    "spec_engine_title_passes": ("{passes} passes, ", "共 {passes} 次计算，"),
    "spec_engine_subtitle": (
        "{model}, greedy, n-gram drafts (vLLM's own counts per step) · {rate} of drafts accepted · the request took {ms} ms",
        "{model}，贪心，n-gram 草稿（vLLM 自己按步给出的计数）· 草稿接受率 {rate} · 这次请求用了 {ms} 毫秒",
    ),
    "spec_engine_panel": ("The engine: drafts per verifying step", "推理引擎：每次验证的草稿"),
    "spec_engine_panel_local": ("This app on {model}: drafts per round (k = {k})", "本应用在 {model} 上：每轮的草稿（k = {k}）"),
    "spec_engine_drafted": ("drafted", "起草"),
    "spec_engine_accepted": ("accepted", "被接受"),
    "spec_engine_axis_step": ("verifying step", "验证步"),
    "spec_engine_axis_tokens": ("tokens", "词元数"),
    "spec_engine_hover": ("{who} · step {n}: {drafted} drafted, {accepted} accepted → {tokens} tokens written",
                          "{who} · 第 {n} 步：起草 {drafted} 个，接受 {accepted} 个 → 写出 {tokens} 个词元"),
    "spec_engine_no_steps": ("No step had a draft: every token came from a plain step",
                             "没有一步有草稿：每个词元都来自普通的一步"),
    "spec_engine_from_draft": ("written by an accepted draft", "由被接受的草稿写出"),
    "spec_engine_from_model": ("the model's own token", "模型自己的词元"),
    "spec_engine_marks": ("{drafted} of {total} tokens came from accepted drafts.",
                          "{total} 个词元中有 {drafted} 个来自被接受的草稿。"),
    "spec_engine_marks_unknown": (
        "Which tokens the drafts wrote is not known for this run: the engine's stream joined the pieces of two steps.",
        "这次无法知道哪些词元是草稿写的：推理引擎的数据流把两步的片段合在了一起。"),
    "spec_panel_rounds": ("Each round: the drafted tokens, then the target's own token", "每一轮：起草的词元，然后是目标模型自己的词元"),
    "spec_panel_checks": ("Each check: the draft is kept when u < p(draft)", "每次检查：u < p(草稿) 时草稿被保留"),
    "spec_panel_rate": ("Tokens per forward pass", "每次前向传播的词元数"),
    "spec_accepted": ("draft kept ✓", "草稿被保留 ✓"),
    "spec_rejected": ("draft rejected ✗", "草稿被拒绝 ✗"),
    "spec_unchecked": ("not checked (after a rejection)", "未检查（在拒绝之后）"),
    "spec_residual": ("target's token in place of the rejected draft", "目标模型替换被拒草稿的词元"),
    "spec_bonus": ("bonus token: every draft was kept", "额外词元：所有草稿都被保留"),
    "spec_own": ("nothing to copy: a plain step", "没有可复制的内容：普通的一步"),
    "spec_round": ("round {n}", "第 {n} 轮"),
    "spec_slot": ("draft {n}", "草稿 {n}"),
    "spec_slot_target": ("target", "目标模型"),
    "spec_axis_p": ("p(draft): the target's probability of the drafted token", "p(草稿)：目标模型给草稿词元的概率"),
    "spec_axis_u": ("u: the acceptance draw", "u：接受检验的随机数"),
    "spec_line_u_p": ("u = p: kept below the line", "u = p：线下方的被保留"),
    "spec_axis_round": ("round", "轮次"),
    "spec_axis_tpp": ("tokens", "词元数"),
    "spec_this_round": ("tokens this round", "本轮的词元数"),
    "spec_running": ("tokens per pass so far", "到目前为止每次前向传播的词元数"),
    "spec_plain_line": ("plain decoding: 1 per pass", "普通解码：每次 1 个"),
    "spec_more_rounds": ("the last {shown} of {total} rounds", "共 {total} 轮中的最后 {shown} 轮"),
    "spec_hover_check": (
        "{token} at position {position}<br>p = {p} · u = {u}<br>{verdict}",
        "位置 {position} 的 {token}<br>p = {p} · u = {u}<br>{verdict}",
    ),
    "spec_hover_top": ("the target's most probable token here: {token}", "目标模型在此处最可能的词元：{token}"),
    "spec_hover_replacement": (
        "{token} at position {position}<br>{kind}<br>its probability there {p} · u = {u}",
        "位置 {position} 的 {token}<br>{kind}<br>它在该分布中的概率 {p} · u = {u}",
    ),
    "spec_hover_round": (
        "round {n}: {drafted} drafted, {kept} kept, +{new} tokens<br>one pass over {positions} positions, {ms} ms",
        "第 {n} 轮：起草 {drafted} 个，保留 {kept} 个，新增 {new} 个词元<br>一次前向传播处理 {positions} 个位置，{ms} 毫秒",
    ),

    "paged_title": (
        "Paged KV cache: {sessions} in {blocks} of {block} tokens",
        "分页 KV 缓存：{sessions}占用 {blocks}，每块 {block} 个词元",
    ),
    # counts in a sentence: English says 1 session, 2 sessions; Chinese has no plural (the _one key: n == 1)
    "paged_n_sessions": ("{n} sessions", "{n} 个会话"),
    "paged_n_sessions_one": ("1 session", "1 个会话"),
    "paged_n_blocks": ("{n} blocks", "{n} 个块"),
    "paged_n_blocks_one": ("1 block", "1 个块"),
    "paged_subtitle": (
        "A model of vLLM's block allocator, computed from this server's real sessions: only their lengths, with token ids hashed per block to find shared prefixes. {per_token} per token, {block_bytes} per block.",
        "这是 vLLM 块分配器的模型，根据本服务器上的真实会话计算：只用到它们的长度，词元 ID 仅按块做哈希以找出共享前缀。每个词元 {per_token}，每块 {block_bytes}。",
    ),
    "paged_panel_table": ("Block table: a row per session, a cell per block of {block} tokens", "块表：每个会话一行，每 {block} 个词元一格"),
    "paged_panel_totals": (
        "Memory for these sessions: contiguous reserves {max} tokens each; paged takes blocks as text grows; a shared prefix block is held once",
        "这些会话所需的内存：连续分配为每个会话预留 {max} 个词元；分页随文本增长逐块分配；共享的前缀块只存一份",
    ),
    "paged_private": ("block of its own (filled part)", "独占的块（已填充部分）"),
    "paged_shared": ("shared prefix block, held once ⇄", "共享前缀块，只存一份 ⇄"),
    "paged_waste": ("empty slots of a last block", "最后一块中的空位"),
    "paged_axis_block": ("block", "块"),
    "paged_session": ("session {n}", "会话 {n}"),
    "paged_you": ("you", "你"),
    "paged_more": ("+ {n} more sessions, counted in the totals", "另有 {n} 个会话，已计入总数"),
    "paged_more_one": ("+ 1 more session, counted in the totals", "另有 1 个会话，已计入总数"),
    "paged_total_contiguous": ("contiguous, {max} per session", "连续分配，每个会话 {max} 个"),
    "paged_total_unshared": ("paged", "分页"),
    "paged_total_paged": ("paged, prefixes shared", "分页，共享前缀"),
    "paged_total_used": ("tokens held", "实际保存的词元"),
    "paged_axis_bytes": ("memory ({unit})", "内存（{unit}）"),
    "paged_hover_block": (
        "{label}, block {i}: {fill} of {block} tokens{shared}",
        "{label}，第 {i} 块：{block} 个中的 {fill} 个词元{shared}",
    ),
    "paged_hover_shared": (" · shared with another session", " · 与其他会话共享"),
    "paged_hover_row": (
        "{label}: {tokens} tokens in {blocks} blocks<br>used {used} · allocated {allocated} · empty {waste}<br>contiguous reservation {reserved}",
        "{label}：{tokens} 个词元，{blocks} 个块<br>已用 {used} · 已分配 {allocated} · 空位 {waste}<br>连续分配预留 {reserved}",
    ),
    # the engine's own blocks, from its KV cache events (viz/paged_engine.py)
    "paged_engine_title": (
        "The engine's own blocks (from its KV cache events): {live} live, {block} tokens each",
        "引擎自己的块（来自它的 KV 缓存事件）：{live}仍在缓存中，每块 {block} 个词元",
    ),
    "paged_engine_agree": (
        "Shared full blocks: the engine {engine}, this app's block model {model} at {block} tokens per block: they agree. Removals in the record: {removed}.",
        "共享的满块：引擎 {engine} 个，本应用的块模型（每块 {block} 个词元）{model} 个：两者一致。记录中的移除：{removed} 次。",
    ),
    "paged_engine_differ": (
        "Shared full blocks: the engine {engine}, this app's block model {model} at {block} tokens per block: they differ (a block not yet stored, or removed and not stored again). Removals in the record: {removed}.",
        "共享的满块：引擎 {engine} 个，本应用的块模型（每块 {block} 个词元）{model} 个：两者不同（有的块引擎还没存，或已移除、未再存）。记录中的移除：{removed} 次。",
    ),
    "paged_engine_own": ("the engine's block, this session's alone", "引擎的块，只属于这个会话"),
    "paged_engine_shared": ("the engine's block, shared with another session ⇄", "引擎的块，与其他会话共享 ⇄"),
    "paged_engine_removed": ("removed by the engine ×", "已被引擎移除 ×"),
    "paged_engine_missing": ("a full block the engine holds no block for", "引擎没有对应块的满块"),
    "paged_engine_axis": ("full block of {block} tokens", "满块（{block} 个词元）"),
    "paged_engine_hover": ("{label}, block {i}: hash {hash}…<br>{state}", "{label}，第 {i} 块：哈希 {hash}…<br>{state}"),
    "paged_engine_hover_missing": ("{label}, block {i}: the engine stored no block for it", "{label}，第 {i} 块：引擎没有存储对应的块"),
    # the session as one HTML page (viz/offline.py)
    "offline_title": ("Token by Token: a saved session", "Token by Token：保存的会话"),
    "offline_intro": (
        "Saved from Token by Token ({model}, {steps} steps). The page replays the recorded steps: nothing is computed again and no network is needed. Use the buttons, the slider or the arrow keys.",
        "保存自 Token by Token（{model}，共 {steps} 步）。本页面回放记录下的每一步：不再重新计算，也不需要联网。可以用按钮、滑块或方向键。",
    ),
    "offline_settings": ("temperature {temperature}, top-k {top_k}, top-p {top_p}, min-p {min_p}",
                         "温度 {temperature}，top-k {top_k}，top-p {top_p}，min-p {min_p}"),
    "offline_step": ("Step {step} of {steps}", "第 {step} 步，共 {steps} 步"),
    "offline_at_prompt": ("only the prompt so far: press Next to see how the first token was chosen",
                          "目前只有提示词：按“下一步”看第一个词元是怎样选出来的"),
    "offline_chosen": ("{token} chosen, probability {prob} at T = 1 (rank {rank}){forced}",
                       "选中 {token}，T = 1 时概率 {prob}（排第 {rank}）{forced}"),
    "offline_forced": (" · forced by the user", " · 由用户强制指定"),
    "offline_first": ("« Start", "« 开头"),
    "offline_back": ("◀ Back", "◀ 上一步"),
    "offline_next": ("Next ▶", "下一步 ▶"),
    "offline_last": ("End »", "结尾 »"),
    "offline_play": ("Play", "播放"),
    "offline_pause": ("Pause", "暂停"),
    "offline_candidates_title": ("The candidates token {step} was chosen from", "第 {step} 个词元是从这些候选中选出的"),
    "offline_col_token": ("token", "词元"),
    "offline_col_prob": ("probability (T = 1)", "概率（T = 1）"),
    "offline_col_final": ("after the settings", "经过采样设置后"),
    "offline_col_fate": ("fate", "结果"),
    "offline_attention_title": ("Attention in layer {layer}, mean over heads: each row is a token looking back at the earlier ones",
                                "第 {layer} 层的注意力（各头平均）：每一行是一个词元回看它之前的词元"),
    "offline_layer": ("layer", "层"),
    "offline_kv_title": ("KV cache: bytes held after each token", "KV 缓存：每个词元之后保存的字节数"),
    "offline_kv_measured": ("measured", "实测"),
    "offline_kv_formula": ("formula", "公式"),
    "offline_axis_tokens": ("tokens held", "保存的词元数"),
    "offline_axis_prob": ("probability at T = 1", "T = 1 时的概率"),
    "offline_axis_bytes": ("cache size ({unit})", "缓存大小（{unit}）"),
    "offline_axis_key": ("looked at (key)", "被看的词元（键）"),
    "offline_axis_query": ("looking (query)", "在看的词元（查询）"),
    "offline_prompt": ("prompt", "提示词"),
    # --- The class, batched (viz/batching.py) ---
    "batch_live_title": (
        "Sessions live now: {live} · the last {passes} passes carried {mean} sessions on average, at most {most}",
        "{live} 个活跃会话 · 最近 {passes} 次计算平均每次带 {mean} 个会话，最多 {most} 个",
    ),
    "batch_live_subtitle": (
        "One forward pass runs every step that arrived together; its height is how many sessions it carried.",
        "一次前向计算运行所有同时到达的步骤；柱子的高度就是它带了几个会话。",
    ),
    # the engine's own numbers (viz/batching_engine.py)
    "engine_metrics_title": ("The engine now: {running} requests running, {waiting} waiting · KV cache {kv}% in use",
                             "引擎此刻：{running} 个请求在运行，{waiting} 个在等待 · KV 缓存已用 {kv}%"),
    "engine_metrics_none": ("The engine's own numbers", "引擎自己的运行数据"),
    "engine_metrics_subtitle": (
        "The engine's own /metrics (vLLM's counters), read every {poll} s while this tab is open: not the app's "
        "estimate.<br>Hit rate: of the prompt tokens looked up in the prefix cache in each interval, the share found.",
        "来自引擎自己的 /metrics（vLLM 的计数器），打开本标签页时每 {poll} 秒读一次：不是本应用的估算。"
        "<br>命中率：每个时间段里在前缀缓存中查找的提示词元中，找到的比例。"),
    "engine_metrics_first": ("First reading taken: the next one in {poll} s draws the lines",
                             "已读到第一次数据：{poll} 秒后的下一次读数会画出曲线"),
    "engine_panel_requests": ("Requests in the engine", "引擎里的请求"),
    "engine_panel_cache": ("KV cache in use, prefix cache hit rate", "KV 缓存占用与前缀缓存命中率"),
    "engine_axis_requests": ("requests", "请求数"),
    "engine_running": ("running", "运行中"),
    "engine_waiting": ("waiting", "等待中"),
    "engine_kv_usage": ("KV cache in use", "KV 缓存占用"),
    "engine_hit_rate": ("prefix cache hit rate", "前缀缓存命中率"),
    "batch_panel_timeline": ("The server's passes", "服务器的每次计算"),
    "batch_panel_cost": ("Time of a pass by sessions carried", "按所带会话数看每次计算的时间"),
    "batch_no_passes": ("No steps yet: press Next token", "还没有步骤：请点“下一个词元”"),
    "batch_axis_ago": ("seconds ago", "多少秒前"),
    "batch_axis_sessions": ("sessions in the pass", "这次计算中的会话数"),
    "batch_axis_ms": ("ms", "毫秒"),
    "batch_hover_pass": ("{n} sessions in one pass · {ms} ms · {ago} s ago", "一次计算带 {n} 个会话 · {ms} 毫秒 · {ago} 秒前"),
    "batch_ms_pass": ("ms per pass", "每次计算的毫秒数"),
    "batch_ms_token": ("ms per token (pass ÷ batch)", "每个词元的毫秒数（计算时间 ÷ 批大小）"),
    "batch_hover_measured": (
        "batch {n}: {ms} ms per pass, {per} ms per token<br>repeats: {runs} ms",
        "批大小 {n}：每次计算 {ms} 毫秒，每个词元 {per} 毫秒<br>各次重复：{runs} 毫秒",
    ),
    "batch_rate_decode1": ("decode<br>batch 1", "解码<br>批大小 1"),
    "batch_rate_decode": ("decode<br>batch {n}", "解码<br>批大小 {n}"),
    "batch_rate_prefill": ("prefill<br>{n} tokens", "预填充<br>{n} 个词元"),
    "batch_axis_batch": ("sessions in one pass (batch)", "一次计算中的会话数（批大小）"),
    "batch_axis_tps": ("tokens per second", "每秒词元数"),
    "batch_panel_passes": ("One decode pass, measured", "实测一次解码计算"),
    "batch_panel_rates": ("Tokens per second", "每秒词元数"),
    "batch_measure_title": (
        "{n} sessions in one pass: {ratio}× the time of one, {tokens}× the tokens per second",
        "一次计算带 {n} 个会话：时间是单个的 {ratio} 倍，每秒词元数是 {tokens} 倍",
    ),
    "batch_measure_subtitle": (
        "{model}: {params} M parameters = {bytes} of weights, read once per decode pass.<br>At batch 1 a pass took {ms} ms: at least {bandwidth} GiB/s read from memory.<br>Each sequence held {context} tokens; {threads} thread, as the server's decode worker.",
        "{model}：{params} M 个参数 = {bytes} 权重，每次解码计算读一遍。<br>批大小 1 时一次计算 {ms} 毫秒：每秒至少从内存读 {bandwidth} GiB。<br>每个序列已有 {context} 个词元；{threads} 个线程，和服务器的解码线程一样。",
    ),
    "batch_measure_sentence": (
        "One decode pass took **{ms1} ms** for one session and **{msn} ms** for {n} sessions: {n}× the tokens for {ratio}× the time, {per} ms per token. Each pass reads all {bytes} of weights, so a single session's pass moved at least **{bandwidth} GiB/s** from memory: decoding waits on memory. A prefill of a long prompt ran **{prefill} tokens/s** against **{decode} tokens/s** decoding one at a time ({speed}×): it does every token's arithmetic in one read of the weights, so it is bound by compute.",
        "一次解码计算，一个会话用了 **{ms1} 毫秒**，{n} 个会话用了 **{msn} 毫秒**：词元是 {n} 倍，时间是 {ratio} 倍，每个词元 {per} 毫秒。每次计算都要读一遍全部 {bytes} 权重，所以单个会话的一次计算至少以 **{bandwidth} GiB/s** 的速度读内存：解码在等内存。长提示词的预填充达到 **每秒 {prefill} 个词元**，一个一个解码只有 **每秒 {decode} 个**（{speed} 倍）：它读一遍权重就做完所有词元的运算，所以受算力限制。",
    ),

    # An engine's model (model/vllm/session.py): what it sends, and the views it cannot feed
    "cand_engine_note": ("From the engine: its top {n} tokens hold {known} at T = 1; the other {tail} is unknown, "
                         "and the cuts and the draw use these {n} only",
                         "来自推理引擎：它给出的前 {n} 个词元在 T = 1 时共占 {known}；其余 {tail} 未知，截断和抽取只用这 {n} 个"),
    "cand_engine_approximate": ("≈ approximate: with these settings the result depends on the unknown rest",
                                "≈ 近似值：在这些设置下，结果取决于未知的其余部分"),
    "cand_engine_sampler": ("after the engine's own sampler", "引擎自己的采样器之后"),
    "cand_engine_sampler_hover": ("after the engine's own sampler: {prob}<br>after this app's stages: {app}",
                                  "经过引擎自己的采样器：{prob}<br>经过本应用的各个阶段：{app}"),
    "engine_attention_title": ("Attention", "注意力"),
    "engine_attention_reason": ("{model} runs on an engine, which sends no attention weights: nothing to draw here.",
                                "{model} 运行在推理引擎上，引擎不提供注意力权重：这里没有可画的内容。"),
    "engine_kv_title": ("KV cache", "KV 缓存"),
    "engine_kv_reason": ("{model} runs on an engine, whose cache tensors cannot be measured here; "
                         "the formula: {formula} for {tokens} tokens (shape from {source}).",
                         "{model} 运行在推理引擎上，这里无法测量它的缓存张量；按公式计算：{tokens} 个词元需要 {formula}（形状取自 {source}）。"),
    # --- Branches (viz/branches.py) and the repetition penalty in the candidates' hover (viz/candidates.py) ---
    "branch_row": ("#{id} · {tokens} · log P {logp}", "#{id} · {tokens} · log P {logp}"),
    "branch_tokens_one": ("1 token", "1 个词元"),
    "branch_tokens": ("{n} tokens", "{n} 个词元"),
    "branch_current": ("shown now", "当前显示"),
    "branch_at": ("◆ you are at step {at}", "◆ 你在第 {at} 步"),
    "branch_hover": ("Branch #{id}: splits off at step {fork}, {tokens}, log P = {logp}<br>…{text}",
                     "分支 #{id}：在第 {fork} 步分出，{tokens}，log P = {logp}<br>…{text}"),
    "branches_title": ("Branches: every text this prompt has had", "分支：这个提示生成过的每一段文本"),
    "branches_texts_one": ("1 text.", "共 1 段文本。"),
    "branches_texts": ("{n} texts.", "共 {n} 段文本。"),
    "branches_one": ("One text so far. Press Back a few steps, then Next token with other settings (or Force another "
                     "token): the old text stays here as a branch, and the two can be compared below.",
                     "目前只有一段文本。先按几次“后退”，再换个设置按“下一个词元”（或强制选另一个词元）：原来的文本会作为一个分支留在这里，"
                     "下面还可以把两段对比。"),
    "branches_subtitle": ("{texts} A line starts where its branch split off (dotted: from which one) and ends at its "
                          "last token; log P is the sum of its tokens' log p at T = 1.",
                          "{texts}每条线从它分出的位置开始（虚线连向它的来源分支），到最后一个词元结束；"
                          "log P 是它各词元在 T = 1 时 log p 之和。"),
    "branches_axis_step": ("generated token (step)", "生成的词元（步）"),
    "compare_cell_title": ("step {step}: log p = {logp} (rank {rank})", "第 {step} 步：log p = {logp}（排名第 {rank}）"),
    "compare_repeated": ("repeats an earlier stretch of 3+ tokens", "重复了前文中 3 个以上词元的片段"),
    "compare_side": ("{side}: branch #{id} · {n} tokens after the split · log P {logp}",
                     "{side}：分支 #{id} · 分叉后 {n} 个词元 · log P {logp}"),
    "compare_same": ("These two texts are the same.", "这两段文本相同。"),
    "compare_split": ("They split at step {step} (heavy line).", "它们在第 {step} 步分开（粗线处）。"),
    "compare_legend": ("Under each token: its log p at T = 1 (redder = less expected). ! forced by you, "
                       "↻ (dashed box) repeats an earlier stretch.",
                       "每个词元下方：它在 T = 1 时的 log p（越红越出乎模型意料）。! 由你强制选择，↻（虚线框）重复了前文片段。"),
    "compare_step": ("step", "步"),
    "compare_trace": ("{side}: #{id}", "{side}：#{id}"),
    "compare_chart_title": ("log p of each token, the two branches", "两个分支中每个词元的 log p"),
    "compare_split_mark": ("split", "分叉"),
    "compare_axis_logp": ("log p (0 = certain)", "log p（0 = 确定）"),
    "guesses_title": ("The class's guesses, before the reveal", "揭晓之前，全班的猜测"),
    "guesses_sub": ("{answered} of {followers} students in the room answered · counts only, no names",
                    "课堂中 {followers} 名学生里有 {answered} 人作答 · 只计人数，不记名字"),
    "guesses_axis": ("students", "学生人数"),
    "guesses_wait_title": ("The teacher's chart appears after the reveal", "老师揭晓答案后，这里显示图表"),
    "guesses_wait_sub": ("It would give the answer away: send your guess first.", "现在显示会泄露答案：请先提交你的猜测。"),
    "chips_legend_room": (
        "Grey outline: the teacher's prompt. Blue: written by the model, darker = the model found it more likely (T = 1). Dashed: forced by the teacher. Read-only: press Explore from here to try your own tokens.",
        "灰色边框：老师的提示词。蓝色：模型写出的词元，颜色越深表示模型认为它越可能（T = 1）。虚线：老师强制选择的词元。只读：点“从这里自己探索”可以尝试你自己的词元。"),
    "hover_logit_penalized": ("logit after the repetition penalty (already in the text)",
                              "重复惩罚后的 logit（已在文本中出现）"),
    # ---- logit lens view (viz/lens.py) ----
    "lens_embeddings": ("emb", "嵌入"),
    "lens_hover": ("layer {layer} · position {pos} ({tok})<br>top token here: {top} ({top_p})<br>next token {target}: "
                   "{p}, rank {rank}",
                   "第 {layer} 层 · 位置 {pos}（{tok}）<br>这里的最高词元：{top}（{top_p}）<br>下一个词元 {target}：{p}，排名 {rank}"),
    "lens_colour": ("P(next)", "P(下一个)"),
    "lens_title": ("Logit lens, {model}: every layer read as the output · {layers} layers × {n} positions",
                   "逻辑透镜，{model}：把每一层都当作输出来读 · {layers} 层 × {n} 个位置"),
    "lens_subtitle": ("Colour: the probability each layer's reading gives the next token · text: that reading's top "
                      "token<br>Framed top row: the model's real output · *: nothing follows yet, compared with the "
                      "model's own top token",
                      "颜色：每一层的读数给下一个词元的概率 · 文字：该读数的最高词元<br>加框的最上一行：模型真正的输出 · *：后面还没有词元，"
                      "与模型自己的最高词元比较"),
    "lens_axis_input": ("token at the position", "该位置的词元"),
    "lens_axis_target": ("next token (compared)", "下一个词元（比较对象）"),
    "lens_axis_layer": ("layer (emb = embeddings)", "层（嵌入 = 词嵌入）"),
    "lens_commit_title": ("Where each token was decided, {model}", "每个词元在哪里被决定（{model}）"),
    "lens_commit_subtitle": ("The first layer from which each token stays the lens's top token · under the heat map, the same columns · green: the step's own u (its settings and seed) draws it "
                             "from that layer's reading too · orange: that u would draw another token there · grey: a prompt token",
                             "从哪一层起它一直是透镜的首选词元 · 与上方热图同列 · 绿色：该步自己的 u（它的设置和种子）从这一层的读数也会抽到它 · 橙色：同一个 u 在这一层会抽到别的词元 · 灰色：提示词中的词元"),
    "lens_commit_drawn": ("generated: its u draws it there", "生成的：它的 u 在此会抽到它"),
    "lens_commit_not_drawn": ("generated: its u would draw another", "生成的：它的 u 会抽到别的"),
    "lens_commit_prompt": ("prompt token", "提示词中的词元"),
    "lens_commit_never": ("never top: the model ranked another token first", "从未居首：模型把别的词元排在第一"),
    "lens_commit_hover": ("{tok} (position {pos}): the top token from layer {layer} on",
                          "{tok}（位置 {pos}）：从第 {layer} 层起一直是首选词元"),
    "lens_commit_never_hover": ("{tok} (position {pos}): the last layer's top token is another one; it was sampled",
                                "{tok}（位置 {pos}）：最后一层的首选是另一个词元；它是抽样得到的"),
    "lens_commit_axis": ("first layer (emb = 0)", "起始层（嵌入 = 0）"),
    "lens_pin_title": ("Pinned tokens through the layers, {model}: position {pos} ({tok})",
                       "固定词元在各层的概率，{model}：位置 {pos}（{tok}）"),
    "lens_pin_subtitle": ("Each layer's lens probability of each pinned token at this position · dashed: the token "
                          "compared there, as in the heat map's column (* at the last position: the model's own top token)",
                          "每一层的透镜读数给每个固定词元的概率（在这个位置）· 虚线：该位置的比较对象，与热图中这一列相同"
                          "（最后一个位置标 *：模型自己的首选词元）"),
    "lens_pin_axis": ("probability (the lens)", "概率（透镜读数）"),
    "lens_pin_compared": ("{tok} (compared)", "{tok}（比较对象）"),
    "lens_pin_hover": ("{tok} · layer {layer}: {p}", "{tok} · 层 {layer}：{p}"),
    # ---- a part switched off (viz/ablation.py) ----
    "abl_part_head": ("head {head} of layer {layer}", "第 {layer} 层的第 {head} 个注意力头"),
    "abl_part_attention": ("the attention of layer {layer}", "第 {layer} 层的注意力"),
    "abl_part_mlp": ("the MLP of layer {layer}", "第 {layer} 层的 MLP"),
    "abl_method_mean": ("replaced by its mean over the text", "替换为它在整段文本上的均值"),
    "abl_method_zero": ("set to zero", "置零"),
    "abl_title": ("{model} with {part} switched off ({how})", "{model}：关闭{part}（{how}）"),
    "abl_subtitle": ("The next token at T = 1, over the whole vocabulary · KL(before ‖ after) = {kl} nats · "
                     "mean over the text's {n} tokens",
                     "下一个词元在 T = 1 下的概率，覆盖整个词表 · KL(之前 ‖ 之后) = {kl} 奈特 · 均值取自文本的 {n} 个词元"),
    "abl_before": ("part on (before)", "开启（之前）"),
    "abl_after": ("part off (after)", "关闭（之后）"),
    "abl_moved": ("change", "变化"),
    "abl_axis_prob": ("probability", "概率"),
    "abl_axis_change": ("change (percentage points)", "变化（百分点）"),
    "abl_panel_candidates": ("Candidates before and after", "之前与之后的候选词元"),
    "abl_panel_moved": ("Rose most and fell most", "上升最多与下降最多"),
    "abl_split": ("The two texts split at step {step}: until then the part made no difference to the token drawn.",
                  "两段文本在第 {step} 步分叉：在此之前，关闭这一部分没有改变抽到的词元。"),
    "abl_same": ("The two texts agree for all {n} steps: switching the part off changed no token drawn.",
                 "两段文本在全部 {n} 步中一致：关闭这一部分没有改变任何抽到的词元。"),
    "abl_legend": ("Both use the page's settings and seed, so the same u at every step. Banded: written with the part "
                   "off; coloured from the split on, the first token that differs framed; ■ the text ended.",
                   "两边都用页面的设置和种子，所以每一步的 u 相同。带条纹底色：关闭该部分后写出的文本；从分叉处起着色，"
                   "第一个不同的词元加框；■ 表示文本结束。"),
    "abl_on_label": ("The model as it is:", "原模型："),
    "abl_off_label": ("With {part} switched off:", "关闭{part}后："),
    # ---- activation patching view (viz/patching.py) ----
    "patch_hover": ("input of layer {layer} · position {pos} ({tok}) patched<br>P({answer}) = {p} · effect {effect}",
                    "第 {layer} 层的输入 · 位置 {pos}（{tok}）被修补<br>P({answer}) = {p} · 效果 {effect}"),
    "patch_colour": ("restored", "恢复比例"),
    "patch_title": ("Activation patching, {model}: where does {answer} come from? · {layers} layers × {n} positions",
                    "激活修补，{model}：{answer} 从哪里来？· {layers} 层 × {n} 个位置"),
    "patch_subtitle": ("One vector of prompt 2's run replaced by prompt 1's (the residual stream entering that layer at "
                       "that position)<br>Colour: (P(patched) − P₂) / (P₁ − P₂)"
                       " of {answer}: 1 = prompt 1's {clean} restored, 0 = prompt 2's {corrupted} unchanged",
                       "把提示词 2 运行中的一个向量换成提示词 1 的（进入该层、该位置的残差流）<br>颜色：{answer} 的 "
                       "(P(修补) − P₂) / (P₁ − P₂)：1 = 恢复到提示词 1 的 {clean}，"
                       "0 = 仍是提示词 2 的 {corrupted}"),
    "patch_axis_position": ("position (prompt 1 → prompt 2 where they differ)", "位置（两者不同处：提示词 1 → 提示词 2）"),
    "patch_axis_layer": ("layer whose input is patched (0 = embeddings)", "被修补输入的层（0 = 词嵌入）"),
    # ---- heads view (viz/heads.py) ----
    "heads_previous": ("previous token", "前一个词元"),
    "heads_induction": ("induction", "归纳"),
    "heads_sink": ("sink (first token)", "汇点（第一个词元）"),
    "heads_hover": ("layer {layer} · head {head}<br>{kind}: {score}<br>click: open in the Attention view",
                    "第 {layer} 层 · 第 {head} 个头<br>{kind}：{score}<br>点击：在“注意力”视图中打开"),
    "heads_colour": ("score", "得分"),
    "heads_title": ("Heads by what they do, {model}: {layers} layers × {heads} heads",
                    "按作用看注意力头，{model}：{layers} 层 × {heads} 个头"),
    "heads_subtitle": ("Mean attention weight on a random sequence of {n} tokens said twice · outlined: the heads "
                       "named below · click a head to open it in the Attention view",
                       "在一段说了两遍的 {n} 个随机词元上的平均注意力权重 · 加框：下面点名的头 · 点击一个头可在“注意力”视图中打开"),
    "heads_axis_head": ("head", "头"),
    "heads_axis_layer": ("layer", "层"),
    # ---- sampler race view (viz/race.py) ----
    "race_penalty": ("penalty {value}", "惩罚 {value}"),
    "race_order_hf": ("Hugging Face order", "Hugging Face 顺序"),
    "race_order_last": ("temperature last", "温度最后"),
    "race_seed": ("seed {seed}", "种子 {seed}"),
    "race_token_title": ("step {step} · log p {logp} at T = 1 · log p {logq} as drawn · entropy {h} bits · u = {u}",
                         "第 {step} 步 · T = 1 时 log p {logp} · 按所抽分布 log p {logq} · 熵 {h} 比特 · u = {u}"),
    "race_side_summary": ("{side} ({settings}): {n} tokens · log P {logp} at T = 1 · log P {logq} as drawn · "
                          "mean entropy {h} bits at T = 1",
                          "{side}（{settings}）：{n} 个词元 · T = 1 时 log P {logp} · 按所抽分布 log P {logq} · "
                          "T = 1 时平均熵 {h} 比特"),
    "race_split": ("The texts split at step {step}: until then both settings drew the same token with the same u.",
                   "两段文本在第 {step} 步分开：在此之前，两种设置用同一个 u 抽到了同一个词元。"),
    "race_same": ("The texts never split: over {n} steps both settings drew the same tokens with the same u.",
                  "两段文本始终没有分开：在 {n} 步里，两种设置用同一个 u 抽到了相同的词元。"),
    "race_legend": ("Coloured from the split on; framed: the first token that differs; ■ the text ended. Hover a "
                    "token for its log p and entropy.",
                    "从分叉处起用颜色标出；加框：第一个不同的词元；■ 文本结束。把鼠标停在词元上可看它的 log p 和熵。"),
    "race_trace": ("side {side}", "{side} 方"),
    "race_split_mark": ("split", "分叉"),
    "race_chart_title": ("The race: log P so far at T = 1 (top), entropy of the distribution drawn from (bottom)",
                         "比赛：到目前为止 T = 1 时的 log P（上），所抽分布的熵（下）"),
    "race_axis_logp": ("log P so far", "累计 log P"),
    "race_axis_step": ("step", "步"),
    "race_axis_entropy": ("entropy (bits)", "熵（比特）"),
    # ---- two models on one text (viz/two_models.py) ----
    "two_chart_title": ("Surprisal per character: each token's bits spread over the bytes it covers",
                        "每个字符的意外度：每个词元的比特数平摊到它覆盖的字节上"),
    "two_bpc": ("{model} {bpc} bits per character", "{model} 每字符 {bpc} 比特"),
    "two_axis_char": ("character of the text", "文本中的字符"),
    "two_axis_bits": ("surprisal (bits)", "意外度（比特）"),
    "two_hover": ("{char} (character {i}) · {model}: {bits} bits", "{char}（第 {i} 个字符）· {model}：{bits} 比特"),
    "two_not_scored": ("partly or wholly in the first token, which nothing predicts", "部分或全部落在第一个词元里，没有任何东西预测它"),
    "two_col_model": ("model", "模型"),
    "two_col_tokens": ("tokens scored", "计分的词元"),
    "two_col_logp": ("log P (nats)", "log P（奈特）"),
    "two_col_ppl": ("perplexity per token", "每词元困惑度"),
    "two_col_bpc": ("bits per character", "每字符比特数"),
    "two_scored_all": ("{model} reads its start token {start} first, so every token of the text is predicted and scored.",
                       "{model} 先读入它的起始词元 {start}，所以文本的每个词元都被预测、都计分。"),
    "two_scored_first": ("{model} adds no start token: its first token {first} (of “{chars}”) has nothing before it "
                         "to be predicted from, so it is not scored (its characters are drawn faint).",
                         "{model} 不加起始词元：它的第一个词元 {first}（属于“{chars}”）前面什么都没有，无从预测，所以不计分"
                         "（它的字符画得较淡）。"),
    "two_comparable": ("Perplexity is per token, and the two tokenizers cut the text into different tokens, so it does "
                       "not compare the models; bits per character does, since both read the same characters.",
                       "困惑度是按词元算的，而两个分词器把文本切成不同的词元，所以它不能用来比较两个模型；"
                       "每字符比特数可以，因为两者读的是同样的字符。"),
    "two_missing": ("{model} is not installed here, so only {other} is shown.", "这里没有安装 {model}，所以只显示 {other}。"),
    "two_gaps": ("Where they disagree most (stretches that both tokenizers cut at the same places, so each number is "
                 "the exact sum of that model's own tokens):",
                 "两者分歧最大的地方（两个分词器在同样位置切开的片段，所以每个数字都是该模型自己词元的精确总和）："),
    "two_gap_item": ("{a} {bits_a} bits, {b} {bits_b} bits", "{a} {bits_a} 比特，{b} {bits_b} 比特"),
    "two_cont_summary": ("{n} tokens after a {prompt}-token prompt · log P {logp} at T = 1",
                         "在 {prompt} 个词元的提示词之后写了 {n} 个词元 · T = 1 时 log P {logp}"),
    "two_cont_settings": ("Both with the page's settings: {settings}.", "两者都用页面上的设置：{settings}。"),
    "two_seed_note": ("The same seed is not the same draws: each draw u is mapped onto a different vocabulary, so even "
                      "a model that agreed on what is likely could pick another token.",
                      "同一个种子并不意味着同样的抽样：每次抽样的 u 落在不同的词表上，所以即使两个模型对可能性的看法一致，"
                      "也可能选出不同的词元。"),
    # ---- beams view (viz/beams.py) ----
    "beams_tree_title": ("Beam search, step {step} (B = {width})", "束搜索，第 {step} 步（B = {width}）"),
    "beams_tree_subtitle": ("Each step: the {k} extensions with the highest cumulative log P; the {width} best that did "
                            "not end go on.<br>Length penalty {penalty}. Drag the tree to see earlier steps.",
                            "每一步：累计 log P 最高的 {k} 个延长；没有结束的前 {width} 个继续。<br>长度惩罚 {penalty}。"
                            "拖动树可查看更早的步骤。"),
    "beams_axis_step": ("step (generated token)", "步（生成的词元）"),
    "beams_axis_rank": ("rank by cumulative log P", "按累计 log P 的排名"),
    "beams_fate_kept": ("kept: a live beam", "保留：活跃的束"),
    "beams_fate_finished": ("finished: ended, in the finished list", "完成：已结束，进入完成列表"),
    "beams_fate_pruned": ("pruned", "剪掉"),
    "beams_best_path": ("the best finished beam", "得分最高的完成束"),
    "beams_prompt": ("prompt", "提示词"),
    "beams_hover": ("step {step}: {token}<br>log p {logp} · cumulative log P {score}<br>{fate} · extends live beam {parent}",
                    "第 {step} 步：{token}<br>log p {logp} · 累计 log P {score}<br>{fate} · 延长第 {parent} 个活跃的束"),
    "beams_row_beam": ("beam {i}", "束 {i}"),
    "beams_row_greedy": ("greedy (B = 1)", "贪心（B = 1）"),
    "beams_row_sampled": ("sampled (your settings)", "采样（你的设置）"),
    "beams_col_which": ("text", "文本"),
    "beams_col_tokens": ("generated tokens (boxed: repeated)", "生成的词元（方框：重复）"),
    "beams_col_logp": ("log P", "log P"),
    "beams_col_per_token": ("log P / token", "每词元 log P"),
    "beams_col_length": ("tokens", "词元数"),
    "beams_col_score": ("beam score", "束得分"),
    "beams_col_repeated": ("repeated", "重复"),
    "beams_texts_note": ("log P: the sum of each token's log p at T = 1 (nearer 0 = likelier; the orange bar grows as it "
                         "falls). Beam score: log P / length^penalty, what the search ranks by. Repeated: tokens inside "
                         "a stretch of 3 or more tokens that appeared before (prompt included), boxed in the text.",
                         "log P：每个词元在 T = 1 时 log p 之和（越接近 0 越可能；橙色条越长表示越低）。束得分：log P / 长度^惩罚，"
                         "搜索按它排序。重复：位于已出现过的 3 个以上词元片段（包括提示词）中的词元，在文本中加了方框。"),
    # ---- constraints view ---- (model/strategies/constrain.py, viz/candidates.py)
    "fate_grammar": ("cut by the constraint (grammar)", "被约束（语法）截掉"),
    "stage_grammar": ("the constraint (grammar)", "约束（语法）"),
    "cand_grammar_note": ("✂ grammar: the constraint removed {removed} tokens holding {mass} of the probability; the rest share it",
                          "✂ 语法：约束去掉了 {removed} 个词元，它们共占 {mass} 的概率；剩下的词元分掉这部分概率"),
    # ---- consistency view ---- (viz/consistency.py)
    "sc_title": ("{n} samples vote {majority} ({votes} of {n})", "{n} 个样本投票选出 {majority}（{n} 票中 {votes} 票）"),
    "sc_subtitle": ("Greedy decoding answers {greedy} · T = {temperature} · {agree} of the samples agree with the greedy answer (★)",
                    "贪心解码的答案是 {greedy} · T = {temperature} · {agree} 的样本与贪心答案（★）一致"),
    "sc_panel_votes": ("Votes per answer", "每个答案的票数"),
    "sc_panel_logprob": ("Each sample's log P(text) at T = 1", "每个样本在 T = 1 时的 log P(文本)"),
    "sc_panel_running": ("Share of the first N samples that give the answer", "前 N 个样本中给出该答案的比例"),
    "sc_axis_votes": ("votes", "票数"),
    "sc_axis_logprob": ("log P (natural log; higher = more likely)", "log P（自然对数；越大越可能）"),
    "sc_axis_n": ("N (samples counted)", "N（计入的样本数）"),
    "sc_axis_share": ("share", "比例"),
    "sc_legend_sample": ("a sample", "一个样本"),
    "sc_legend_greedy": ("greedy (T = 0)", "贪心（T = 0）"),
    "sc_legend_majority": ("majority answer {answer}", "多数答案 {answer}"),
    "sc_legend_greedy_share": ("greedy answer {answer}", "贪心答案 {answer}"),
    "sc_hover_sample": ("sample {k} (seed {seed}) · log P = {logprob}<br>{text}", "样本 {k}（种子 {seed}）· log P = {logprob}<br>{text}"),
    # ---- chinese: bytes become characters ---- (model/decoding/tokens.py token_labels, viz/chips.py)
    "chips_decoded": ("Decoded text:", "解码后的文本："),
    "bytes_part": ("bytes {hex}: token {part} of the {parts} that make {text}",
                   "字节 {hex}：组成 {text} 的 {parts} 个词元中的第 {part} 个"),
    "bytes_pending": ("first {held} bytes of a {needed}-byte character ({hex}; not finished yet)",
                      "一个 {needed} 字节字符的前 {held} 个字节（{hex}；字符还没写完）"),
    "bytes_pending_one": ("first byte of a {needed}-byte character ({hex})", "一个 {needed} 字节字符的第 1 个字节（{hex}）"),
    # ---- chinese: the tokenizers view ---- (viz/tokenizers.py)
    "tok_summary": ("{tokens} tokens for {chars} characters ({per_char} per character) · {steps} decode steps · "
                    "KV cache {per_token} B per token (float32), {kv} for this text",
                    "{chars} 个字符用了 {tokens} 个词元（每个字符 {per_char} 个）· 解码 {steps} 步 · "
                    "KV 缓存每个词元 {per_token} 字节（float32），这段文本共 {kv}"),
    "tok_verdict": ("{a} needs {na} tokens where {b} needs {nb} ({ratio}×): every token is one more decode step and "
                    "one more row in the KV cache, so the tokenizer sets a language's price.",
                    "{a} 需要 {na} 个词元，{b} 需要 {nb} 个（{ratio} 倍）：每个词元都多一步解码、多一行 KV 缓存，"
                    "所以分词器决定了一种语言的代价。"),
    "tok_one_model": ("Only one tokenizer is installed here.", "这里只安装了一个分词器。"),
    "tok_subwords": ("Tokens are subwords: “unbelievable”", "词元是子词：“unbelievable”"),
    # ---- class: the class as the sampler, beat the model (viz/class_sampler.py) ----
    "cs_title": ("The class as the sampler: each student drew one token", "全班来抽样：每位学生抽一个词元"),
    "cs_sub": ("solid: the class's draws · outlined: what p expects (n × p) · p beside each token",
               "实心：全班抽到的次数 · 空心：按 p 的期望次数（n × p）· 每个词元旁边是 p"),
    "cs_panel": ("T = {temperature} · {n} draws", "T = {temperature} · {n} 次抽样"),
    "cs_legend_class": ("the class's draws", "全班的抽样"),
    "cs_legend_expected": ("expected: n × p", "期望：n × p"),
    "cs_hover_class": ("%{x}<br>drawn %{y} times", "%{x}<br>抽到 %{y} 次"),
    "cs_hover_expected": ("%{x}<br>expected %{y:.1f} times", "%{x}<br>期望 %{y:.1f} 次"),
    "cs_axis_draws": ("draws", "次数"),
    "cs_none": ("No draws yet: ask the class to draw.", "还没有抽样：请让全班抽样。"),
    "cs_other": ("other tokens", "其他词元"),
    "game_title": ("Beat the model: bits per token (lower is better)", "战胜模型：每个词元的比特数（越低越好）"),
    "game_sub": ("the class {klass} bits · the model {model} bits · over {n} tokens",
                 "全班 {klass} 比特 · 模型 {model} 比特 · 共 {n} 个词元"),
    "game_legend_class": ("the class: −log₂ of its share (k + 1)/(n + 2)", "全班：−log₂（(k + 1)/(n + 2)）"),
    "game_legend_model": ("the model: −log₂ p(token)", "模型：−log₂ p(词元)"),
    "game_hover_class": ("{right} of {answered} guessed it", "{answered} 人中 {right} 人猜中"),
    "game_axis_bits": ("bits (surprise)", "比特（意外程度）"),
    # ---- truth: what chose a kept speculative token, and a trace's claim that did not reproduce ----
    "spec_how_accepted": ("kept from the speculative run: the draft passed its test, u = {u} < p = {p}",
                          "来自推测解码：草稿通过了检验，u = {u} < p = {p}"),
    "spec_how_residual": ("kept from the speculative run: the draft here failed its test (u = {ru} ≥ p = {rp}), "
                          "then u = {u} drew this token from the rest of p (probability {p} there)",
                          "来自推测解码：这里的草稿未通过检验（u = {ru} ≥ p = {rp}），随后 u = {u} 从 p 的其余部分抽到这个词元"
                          "（在其中的概率为 {p}）"),
    "spec_how_bonus": ("kept from the speculative run: every draft was kept, then the draw u = {u} picked this "
                       "bonus token (p = {p})",
                       "来自推测解码：草稿全部保留，随后抽取 u = {u} 选中了这个额外词元（p = {p}）"),
    "cand_title_spec": ("Next token (position {position}): {token}, kept from the speculative run (not the draw below)",
                        "下一个词元（位置 {position}）：{token}，来自推测解码（不是下面的抽取）"),
    "cand_panel_spec": ("What a plain step's draw would do here", "普通一步在这里的抽取会怎样"),
    "chips_marked_forced": ("forced: the trace said the model drew it, but its settings and seed draw another token",
                            "强制：轨迹文件说这是模型抽到的，但按它的设置和种子会抽到另一个词元"),
    "cand_title_marked": ("Next token (position {position}): {token}, taken from a trace (its settings and seed draw "
                          "another token here)",
                          "下一个词元（位置 {position}）：{token}，取自轨迹文件（按它的设置和种子这里会抽到另一个词元）"),
    # ---- truth: timings with their spread, and when the machine was too noisy to conclude ----
    "timing_spread_note": ("Each point: the median of the runs after an untimed warm-up; bars: fastest to slowest run.",
                           "每个点：先不计时地预热一次，再取多次运行的中位数；误差线：最快到最慢的一次。"),
    "timing_noisy": ("Too noisy to conclude at {lengths} tokens: the two ranges overlap, or fewer than 3 runs fit.",
                     "在 {lengths} 个词元处无法下结论：两者的范围重叠，或者来得及运行的次数少于 3 次。"),
    "batch_spread_note": ("Each time is the median of {runs} runs after an untimed warm-up; hover a bar for every run.",
                          "每个时间都是预热一次后 {runs} 次运行的中位数；把鼠标停在柱子上可看每一次。"),
    "batch_noisy": ("**Too noisy to conclude this time**: not every run of the largest batch beat batch 1 per token, "
                    "or a larger batch's pass came out faster than batch 1's, which only a busy machine does. Measure again.",
                    "**这一次机器太忙，无法下结论**：最大批次每个词元的时间并非每次都低于批大小 1，或者某个更大批次的一次计算反而比批大小 1 更快，"
                    "这只有机器忙时才会出现。请再测一次。"),
    # ---- projector: chart notes (issue 22) ----
    "temp_no_star": ("A panel with no ★: the token drawn there lies outside the {n} bars shown.",
                     "没有 ★ 的小图：那里抽中的词元不在所示的 {n} 个条形之中。"),
    # ---- prefill against decode (viz/prefill_decode.py) ----
    "pd_hover_prefill": ("prefill of {size} tokens: one pass {ms} ms<br>{per} ms per token, {tps} tokens/s<br>{bound}"
                         "<br>runs: {runs} ms", "预填充 {size} 个词元：一次计算 {ms} 毫秒<br>每个词元 {per} 毫秒，每秒 {tps} 个词元"
                         "<br>{bound}<br>各次：{runs} 毫秒"),
    "pd_hover_decode": ("decode step, batch {size}: one pass {ms} ms<br>{per} ms per token, {tps} tokens/s<br>{bound}"
                        "<br>runs: {runs} ms", "解码一步，批大小 {size}：一次计算 {ms} 毫秒<br>每个词元 {per} 毫秒，每秒 {tps} 个词元"
                        "<br>{bound}<br>各次：{runs} 毫秒"),
    "pd_bound_memory": ("bound by memory bandwidth", "受内存带宽限制"),
    "pd_bound_compute": ("bound by the FLOP rate", "受算力（FLOP 速率）限制"),
    "pd_speed_title": ("Tokens per second: prefill by prompt length, decode by batch ({model})",
                       "每秒词元数：预填充按提示长度，解码按批大小（{model}）"),
    "pd_speed_subtitle": ("Measured here, every pass a turn at the model's scheduler on {threads} threads; each decoding "
                          "sequence holds {context} tokens", "在本机测量，每次计算都在模型的调度器里轮到一次，使用 {threads} 个线程；"
                          "每条解码序列已有 {context} 个词元"),
    "pd_axis_prompt": ("prefill: prompt tokens", "预填充：提示词元数"),
    "pd_axis_batch": ("decode: sequences in the batch", "解码：批里的序列数"),
    "pd_axis_tps": ("tokens per second", "每秒词元数"),
    "pd_roof": ("this machine's ceiling", "本机的上限"),
    "pd_points_prefill": ("prefill (tokens)", "预填充（词元数）"),
    "pd_points_decode": ("decode (batch)", "解码（批大小）"),
    "pd_kind_prefill": ("prefill", "预填充"),
    "pd_kind_decode": ("decode, batch", "解码，批大小"),
    "pd_roof_hover": ("{kind} {size}<br>{intensity} FLOPs per byte<br>{flops}FLOP/s, {share} of the ceiling there"
                      "<br>{bound}", "{kind} {size}<br>每字节 {intensity} 次浮点运算<br>{flops}FLOP/s，是那里上限的 {share}"
                      "<br>{bound}"),
    "pd_roof_title": ("Where each pass is bound: a roofline of this machine ({model})",
                      "每次计算受什么限制：本机的屋顶线（{model}）"),
    "pd_roof_subtitle": ("Measured: a float32 matmul {flops}FLOP/s, a large copy {bw}B/s ({threads} threads); they meet "
                         "at {balance} FLOPs per byte. FLOPs and bytes of a pass counted from the model's shapes",
                         "实测：float32 矩阵乘法 {flops}FLOP/s，大块复制 {bw}B/s（{threads} 个线程）；两者在每字节 {balance} "
                         "次浮点运算处相交。每次计算的浮点运算数和字节数按模型形状计算"),
    "pd_axis_intensity": ("arithmetic intensity: FLOPs per byte read (log)", "算术强度：每读一个字节的浮点运算数（对数）"),
    "pd_axis_flops": ("FLOPs per second achieved (log)", "实际达到的每秒浮点运算数（对数）"),
    "pd_balance": ("balance: {balance}", "平衡点：{balance}"),
    "pd_row_unchunked": ("unchunked: one pass", "不分块：一次计算"),
    "pd_row_chunked": ("chunked: {chunk} tokens a pass", "分块：每次 {chunk} 个词元"),
    "pd_row_split": ("split off (a model): this machine", "拆分（模型）：本机"),
    "pd_row_other": ("split off (a model): a second machine", "拆分（模型）：第二台机器"),
    "pd_seg_decode": ("the class's decode step", "全班的一步解码"),
    "pd_seg_prefill": ("the long prompt's prefill", "长提示的预填充"),
    "pd_seg_chunk": ("a chunk of the prefill", "预填充的一块"),
    "pd_seg_transfer": ("its KV cache sent (assumed link)", "发送它的 KV 缓存（假设的链路）"),
    "pd_seg_hover": ("{kind}: {start} to {end} ms ({ms} ms)", "{kind}：{start} 到 {end} 毫秒（{ms} 毫秒）"),
    "pd_time_title": ("A {n}-token prompt arrives while a class of {batch} decodes", "全班 {batch} 人正在解码时，来了一个 {n} 词元的提示"),
    "pd_time_subtitle": ("The class's longest wait between tokens: {un} ms unchunked, {ch} ms chunked, {sp} ms split off "
                         "(a model: a second machine like this one, a {link} GB/s link assumed). Passes measured above, "
                         "placed by the scheduler's rule", "全班两个词元之间最长的等待：不分块 {un} 毫秒，分块 {ch} 毫秒，拆分 {sp} 毫秒"
                         "（模型：第二台与本机一样的机器，假设链路 {link} GB/s）。各次计算为上面的实测值，按调度器的规则排列"),
    "pd_axis_ms": ("milliseconds", "毫秒"),
    "pd_engine_gaps": ("gap before each token", "每个词元之前的间隔"),
    "pd_engine_gap_hover": ("token %{x}: %{y:.0f} ms after the one before", "第 %{x} 个词元：比前一个晚 %{y:.0f} 毫秒"),
    "pd_engine_steps": ("engine steps", "引擎的步数"),
    "pd_engine_step_hover": ("%{y} steps carried %{x} tokens", "%{y} 步各携带了 %{x} 个词元"),
    "pd_engine_before": ("before the long prompt", "长提示之前"),
    "pd_engine_after": ("after it was sent", "发出长提示之后"),
    "pd_engine_title": ("The engine's own numbers: a {n}-token prompt in the middle of a decode ({model})",
                        "引擎自己的数据：解码进行中来了一个 {n} 词元的提示（{model}）"),
    "pd_engine_subtitle": ("Left: the decode's tokens as they arrived here. Right: the engine's steps during the probe "
                           "by the tokens each carried ({steps} steps, the largest at most {largest})",
                           "左：解码的词元到达这里的时间。右：探测期间引擎的每一步按携带的词元数分组（共 {steps} 步，最大的不超过 {largest}）"),
    "pd_engine_axis_token": ("token of the decode", "解码的第几个词元"),
    "pd_engine_axis_step": ("tokens in one engine step (bucket)", "引擎一步里的词元数（区间）"),
    "pd_engine_axis_steps": ("steps", "步数"),
    "pd_col_pass": ("pass", "计算"),
    "pd_col_ms": ("ms", "毫秒"),
    "pd_col_per": ("ms per token", "每词元毫秒"),
    "pd_col_tps": ("tokens/s", "词元/秒"),
    "pd_col_intensity": ("FLOPs per byte", "每字节浮点运算"),
    "pd_col_rate": ("achieved", "实际达到"),
    "pd_col_bound": ("bound by", "限制"),
    "pd_name_prefill": ("prefill, {size} tokens", "预填充，{size} 个词元"),
    "pd_name_decode": ("decode, batch {size}", "解码，批大小 {size}"),
    "pd_summary": (
        "This machine, measured now on {threads} threads: a matmul reaches {flops}FLOP/s and a copy moves {bw}B/s, so "
        "a pass needs about {balance} FLOPs per byte it reads to be bound by the FLOP rate rather than by memory. "
        "A prefill of {pn} tokens made {ptps} tokens per second ({pper} ms each); one decode step at batch 1 made "
        "{dtps} ({dms} ms for its one token): {ratio} times fewer, because it reads every weight for one token. At "
        "batch {bn} a decode step made {btps} tokens per second in {bms} ms: the same weights read once for all. "
        "A {n}-token prompt arriving while a class of {batch} decodes (a step every {normal} ms): unchunked, the "
        "class waits up to {un} ms for a token; in chunks of {chunk}, up to {ch} ms, and the prompt's prefill ends at "
        "{ft_ch} ms instead of {ft_un}; split off to a second machine (a model), the class waits {sp} ms and the "
        "prompt's cache arrives at {ft_sp} ms. The whole measurement: {ms} s, {passes} turns at the model's scheduler.",
        "本机，刚才用 {threads} 个线程测得：矩阵乘法达到 {flops}FLOP/s，复制每秒搬运 {bw}B，所以一次计算每读一个字节"
        "要做大约 {balance} 次浮点运算，才会受算力而不是内存限制。预填充 {pn} 个词元每秒处理 {ptps} 个词元（每个 {pper} 毫秒）；"
        "批大小 1 的一步解码每秒只有 {dtps} 个（它唯一的词元用了 {dms} 毫秒）：少了 {ratio} 倍，因为它为一个词元就要读一遍所有权重。"
        "批大小 {bn} 时，一步解码在 {bms} 毫秒内每秒做出 {btps} 个词元：同样的权重读一次，大家共用。"
        "全班 {batch} 人正在解码（每 {normal} 毫秒一步）时来了一个 {n} 词元的提示：不分块，全班最长要等 {un} 毫秒才得到下一个词元；"
        "每块 {chunk} 个词元分块，最长等 {ch} 毫秒，而这个提示的预填充在 {ft_ch} 毫秒结束，而不是 {ft_un} 毫秒；"
        "拆分到第二台机器上（模型），全班只等 {sp} 毫秒，提示的缓存在 {ft_sp} 毫秒到达。整个测量：{ms} 秒，在模型的调度器里轮到 {passes} 次。"),
    "pd_engine_summary": (
        "The engine's numbers over the probe: {steps} steps, the largest carrying at most {largest} tokens; the long "
        "prompt ({n} tokens) spent {prefill} ms in its prefill, {ttft} ms from arrival to its first token ({long_ms} ms "
        "as timed here); the engine's mean gap between tokens {itl} ms. The decode's tokens arrived here every {before} "
        "ms before the long prompt, and at worst {worst} ms after it was sent.",
        "探测期间引擎的数据：共 {steps} 步，最大的一步最多携带 {largest} 个词元；长提示（{n} 个词元）的预填充阶段用了 {prefill} 毫秒，"
        "从到达到第一个词元 {ttft} 毫秒（这里计时为 {long_ms} 毫秒）；引擎记录的词元间平均间隔 {itl} 毫秒。长提示之前，解码的词元每 "
        "{before} 毫秒到达这里一个；发出长提示之后，最长的间隔是 {worst} 毫秒。"),
    "pd_engine_chunked": ("No step could hold the whole prompt (each at most {largest} tokens, the prompt {n}): the "
                          "engine prefilled it in chunks, its decode tokens riding along in the same steps.",
                          "没有一步能装下整个提示（每步最多 {largest} 个词元，提示有 {n} 个）：引擎把它分块预填充，解码的词元搭同一步的车。"),
    "pd_engine_whole": ("A step large enough for the whole prompt ran (up to {largest} tokens): the engine's budget per "
                        "step is above {n} tokens here, so it was not chunked (start vLLM with a smaller "
                        "--max-num-batched-tokens to see chunks).",
                        "有一步大到能装下整个提示（最多 {largest} 个词元）：这里引擎每步的预算超过 {n} 个词元，所以没有分块"
                        "（用更小的 --max-num-batched-tokens 启动 vLLM 就能看到分块）。"),
    "pd_engine_no_steps": ("The engine counted no step during the probe.", "探测期间引擎没有记录任何一步。"),
    "pd_engine_others": ("Other requests reached the engine meanwhile: its numbers include them.",
                         "这期间还有别的请求到达引擎：它的数据里也包括它们。"),
    # ---- lessons: prefill against decode, why this token (viz/lesson.py) ----
    "lesson_pd_bar_prefill": ("a prefill of {n} tokens", "预填充 {n} 个词元"),
    "lesson_pd_bar_decode": ("one decode step, batch 1", "一步解码，批大小 1"),
    "lesson_pd_title": ("Tokens per second here: prefill against decode", "本机每秒词元数：预填充对解码"),
    "lesson_pd_subtitle": ("Bars: the median of three runs; dots: every run", "柱：三次的中位数；点：每一次"),
    "lesson_attr_bar_text": ("{ig} (attention {att})", "{ig}（注意力 {att}）"),
    "lesson_attr_title": ("Why {target}? The question's tokens' integrated gradients", "为什么是 {target}？题中各词元的积分梯度"),
    "lesson_attr_subtitle": ("In logits, {steps} points along the path; attention of the same step in brackets",
                             "单位是 logit，路径上 {steps} 个点；括号里是同一步的注意力"),
    # ---- why this token: attribution (viz/attribution.py) ----
    "attr_row_ig": ("Integrated gradients", "积分梯度"),
    "attr_row_gxi": ("Gradient × input", "梯度 × 输入"),
    "attr_row_attention": ("Attention of this step", "这一步的注意力"),
    "attr_attention_last": ("attention, last layer", "注意力（最后一层）"),
    "attr_chip_ig": ("position {pos} · {tok}: integrated gradient {value} (logits)", "位置 {pos} · {tok}：积分梯度 {value}（logit）"),
    "attr_chip_gxi": ("position {pos} · {tok}: gradient × input {value}", "位置 {pos} · {tok}：梯度 × 输入 {value}"),
    "attr_chip_attention": ("position {pos} · {tok}: attention {value} (mean over every layer and head)",
                            "位置 {pos} · {tok}：注意力 {value}（所有层、所有头的平均）"),
    "attr_chip_kept": ("{tok}: kept as it is along the path (the attention sink), so it gets no attribution",
                       "{tok}：在路径上保持不变（注意力汇聚点），所以没有归因"),
    "attr_chips_legend": ("Blue raises the logit of {target}, vermillion lowers it, white: nothing; green: how much "
                          "the step's attention reads each token. Hover a chip for its number.",
                          "蓝色抬高 {target} 的 logit，朱红色压低它，白色：没有影响；绿色：这一步的注意力读取每个词元的多少。"
                          "把鼠标停在词元上可看数值。"),
    "attr_title": ("Why {target}? Each earlier token's share in its logit ({model})",
                   "为什么是 {target}？前面每个词元在它的 logit 里的份额（{model}）"),
    "attr_subtitle": ("Integrated gradients sum to {total}; the logit went from {base} (baseline) to {logit}: gap {gap} "
                      "with {points} points",
                      "积分梯度之和为 {total}；logit 从 {base}（基线）变为 {logit}：用 {points} 个点，差 {gap}"),
    "attr_axis_logit": ("share (logits)", "份额（logit）"),
    "attr_axis_attention": ("attention", "注意力"),
    "attr_bar_hover": ("position {pos} · {tok}<br>integrated gradient {ig}<br>gradient × input {gxi}<br>attention {att}",
                       "位置 {pos} · {tok}<br>积分梯度 {ig}<br>梯度 × 输入 {gxi}<br>注意力 {att}"),
    # ---- Medusa: one verifying pass and the whole run (viz/medusa.py) ----
    "medusa_root": ("root: the text's last token", "根：文本的最后一个词元"),
    "medusa_accepted": ("guess accepted", "猜测被接受"),
    "medusa_rejected": ("guess checked, not the model's token", "检查过，不是模型的词元"),
    "medusa_unreached": ("computed, but its parent was wrong", "算过了，但它的父节点错了"),
    "medusa_own": ("the model's own token (every pass writes one)", "模型自己的词元（每次都会写一个）"),
    "medusa_guess_accepted": ("accepted", "被接受"),
    "medusa_guess_tree": ("in the tree", "在树中"),
    "medusa_guess_out": ("not in the tree", "不在树中"),
    "medusa_pass_title": ("Pass {n} of {passes}: {nodes} candidates checked at once, {accepted} accepted; tokens written: {new}",
                          "第 {n} 次（共 {passes} 次）：一次检查 {nodes} 个候选，接受 {accepted} 个，写下 {new} 个词元"),
    "medusa_pass_subtitle": ("The heads read the hidden state of position t, just before the root {root} (position {position}, "
                             "t + 1): head k guesses position t + k + 1. ★: the model's own token there. Numbers: the "
                             "mask's rows and columns.",
                             "各个头读取位置 t 的隐藏状态，t 就在根 {root}（位置 {position}，即 t + 1）之前：第 k 个头猜位置 "
                             "t + k + 1。★：模型自己在那里的词元。数字：掩码的行号和列号。"),
    "medusa_hover_guess": ("head {head} guesses position t + {ahead}<br>its guess {rank}: {token} ({p})",
                           "第 {head} 个头猜位置 t + {ahead}<br>它的第 {rank} 个猜测：{token}（{p}）"),
    "medusa_hover_own": ("the model's own token after the accepted path: {token}<br>written without a check: it is the "
                         "model's greedy token there", "接受路径之后模型自己的词元：{token}<br>不用检查就写下：它就是模型在那里的贪心词元"),
    "medusa_hover_node": ("node {i}: {token} (head {depth}, guess {rank})<br>{kind}<br>the model's greedy token after it: {greedy}",
                          "节点 {i}：{token}（第 {depth} 个头，第 {rank} 个猜测）<br>{kind}<br>模型在它之后的贪心词元：{greedy}"),
    "medusa_mask_text": ("text ({n} tokens)", "文本（{n} 个词元）"),
    "medusa_hover_mask_text": ("node {i} attends to the whole text before the root ({n} tokens, from the cache)",
                               "节点 {i} 关注根之前的全部文本（{n} 个词元，来自缓存）"),
    "medusa_hover_mask_yes": ("node {i} attends to node {j}: {j} is on its path from the root",
                              "节点 {i} 关注节点 {j}：{j} 在它从根出发的路径上"),
    "medusa_hover_mask_no": ("node {i} does not see node {j}: not on its path (a sibling or another branch)",
                             "节点 {i} 看不到节点 {j}：不在它的路径上（兄弟节点或另一条分支）"),
    "medusa_mask_allowed": ("mask: may attend", "掩码：可以关注"),
    "medusa_mask_blocked": ("mask: blocked", "掩码：被屏蔽"),
    "medusa_panel_guesses": ("What each head guesses", "每个头的猜测"),
    "medusa_panel_tree": ("The tree of candidates", "候选树"),
    "medusa_panel_mask": ("The tree attention mask of this one pass", "这一次计算的树形注意力掩码"),
    "medusa_rank": ("guess {r}", "猜测 {r}"),
    "medusa_head": ("head {k}: t + {ahead}", "头 {k}：t + {ahead}"),
    "medusa_depth_root": ("root", "根"),
    "medusa_depth": ("head {k}", "头 {k}"),
    "medusa_run_title": ("Medusa wrote {tokens} tokens in {passes} passes: {tpp} per pass (prompt lookup: {lookup})",
                         "Medusa 用 {passes} 次计算写了 {tokens} 个词元：每次 {tpp} 个（提示词查找：{lookup} 个）"),
    "medusa_run_subtitle_same": ("Greedy: all three wrote exactly the same tokens. Tree of {nodes} candidates; the heads' "
                                 "top-1 on held-out text: {top1}.",
                                 "贪心：三种方式写下的词元完全相同。树中有 {nodes} 个候选；各个头在留出文本上的 top-1 准确率：{top1}。"),
    "medusa_run_subtitle_differs": ("The three did NOT write the same tokens (a near-tie between two tokens, broken "
                                    "differently by float rounding). Tree of {nodes} candidates; heads' top-1: {top1}.",
                                    "三种方式写下的词元并不相同（两个词元几乎并列，浮点舍入让它们分出不同的胜负）。树中有 {nodes} 个候选；"
                                    "各个头的 top-1：{top1}。"),
    "medusa_hover_pass": ("pass {n}: {accepted} guesses accepted, {new} tokens written<br>{positions} tokens in the pass, {ms} ms",
                          "第 {n} 次：接受 {accepted} 个猜测，写下 {new} 个词元<br>这次计算有 {positions} 个词元，{ms} 毫秒"),
    "medusa_running": ("tokens per pass so far", "到目前为止每次计算的词元数"),
    "medusa_way_plain": ("one at a time", "一次一个"),
    "medusa_way_lookup": ("prompt lookup", "提示词查找"),
    "medusa_way_medusa": ("Medusa", "Medusa"),
    "medusa_way_bar": ("{tpp}<br>{ms} ms/token", "{tpp}<br>每个词元 {ms} 毫秒"),
    "medusa_panel_passes": ("Tokens each verifying pass wrote", "每次验证写下的词元"),
    "medusa_panel_ways": ("Tokens per pass, same text", "同一文本上每次计算的词元数"),
    "medusa_axis_pass": ("verifying pass", "验证次数"),
    "medusa_axis_tokens": ("tokens written", "写下的词元"),
    "medusa_axis_tpp": ("tokens per pass", "每次计算的词元数"),
}


# ---- what a class leaves with (issue 49): the saved page's notes, a student's summary, the class report ----
WORDS.update({
    "offline_notes": ("My notes", "我的笔记"),
    "printable_print": ("Print or save as PDF", "打印或保存为 PDF"),
    "summary_title": ("My summary · Token by Token", "我的总结 · Token by Token"),
    "summary_meta": ("Made {made}, from this page's own work.", "生成于 {made}，只来自这个页面自己的操作。"),
    "summary_only_yours": ("This summary holds only what this page did: nothing of any other student.",
                           "这份总结只包含这个页面做过的事：没有任何其他学生的内容。"),
    "summary_texts": ("The texts I wrote", "我写的文本"),
    "summary_no_texts": ("No text yet.", "还没有文本。"),
    "summary_text_head": ("Text {n} · {model}", "文本 {n} · {model}"),
    "summary_mode_raw": ("raw text", "原始文本"),
    "summary_mode_chat": ("chat", "对话"),
    "summary_prompt": ("Prompt ({mode})", "提示词（{mode}）"),
    "summary_written": ("Written: {n} tokens", "写出：{n} 个词元"),
    "summary_written_one": ("Written: 1 token", "写出：1 个词元"),
    "summary_ended": ("(the model ended the text)", "（模型结束了文本）"),
    "summary_steps": ("Steps", "步骤"),
    "summary_settings_head": ("Settings", "设置"),
    "summary_step_one": ("step {step}", "第 {step} 步"),
    "summary_step_range": ("steps {first}–{last}", "第 {first}–{last} 步"),
    "summary_settings": ("T {temperature} · top-k {top_k} · top-p {top_p} · min-p {min_p} · repetition penalty "
                         "{penalty} · {order} · seed {seed}",
                         "T {temperature} · top-k {top_k} · top-p {top_p} · min-p {min_p} · 重复惩罚 {penalty} · "
                         "{order} · 种子 {seed}"),
    "summary_order_first": ("temperature first", "先温度"),
    "summary_order_last": ("temperature last", "温度最后"),
    "summary_forced": ("Steps I forced ({n})", "我强制选择的步骤（{n}）"),
    "summary_forced_item": ("step {step}: {token} (the model's rank {rank}, probability {prob})",
                            "第 {step} 步：{token}（模型排第 {rank}，概率 {prob}）"),
    "summary_backs": ("Where I went back ({n})", "我后退的地方（{n}）"),
    "summary_back_item": ("from step {frm} back to step {to} ({n} undone: {tokens})",
                          "从第 {frm} 步退回第 {to} 步（撤销 {n} 个：{tokens}）"),
    "summary_questions": ("Questions I answered", "我回答的问题"),
    "summary_no_questions": ("No question answered yet.", "还没有回答问题。"),
    "summary_score": ("{title}: {right} of {total} right", "{title}：答对 {right} / {total}"),
    "summary_room_score": ("In the room: {right} of {total} right", "在课堂里：答对 {right} / {total}"),
    "summary_in_lesson": ("Lesson “{title}”, step {step}", "课程“{title}”，第 {step} 步"),
    "summary_in_room": ("Asked in the room", "课堂提问"),
    "summary_your_answer": ("My answer:", "我的回答："),
    "summary_no_answer": ("no answer", "没有回答"),
    "summary_right": ("✔ right", "✔ 对"),
    "summary_wrong": ("✘ not right", "✘ 不对"),
    "summary_right_answer": ("The right answer:", "正确答案："),
    "summary_no_verdict": ("none (the measurement was too noisy to say)", "没有（测量噪声太大，无法判断）"),
    "summary_why": ("Why:", "原因："),
    "summary_notes": ("My notes", "我的笔记"),
    "summary_no_notes": ("No notes.", "没有笔记。"),
    "summary_charts": ("Charts I kept", "我留下的图"),
    "summary_no_charts": ("No chart kept: press Keep this chart under a chart to add it here.",
                          "没有留下图：在图下面按“留下这张图”，它就会出现在这里。"),
    "summary_chart_caption": ("{tab}, step {step}", "{tab}，第 {step} 步"),
    "report_title": ("Class report · room {code}", "班级报告 · 课堂 {code}"),
    "report_meta": ("Made {made}. The room has been open {minutes} min; {joined} seats joined, {seated} are here "
                    "now, {peak} at most at once.",
                    "生成于 {made}。课堂已开设 {minutes} 分钟；共有 {joined} 个座位加入过，现在有 {seated} 个，最多同时 {peak} 个。"),
    "report_privacy": ("Students appear here only under the name they typed when joining, or their seat's number; no "
                       "address. The server keeps no report, and forgets the room's answers when it closes.",
                       "学生在这里只以加入时自己输入的名字或座位号出现；没有任何地址。服务器不保留报告，课堂关闭时就会忘记其中的回答。"),
    "report_questions": ("Questions", "问题"),
    "report_no_questions": ("No question was asked in the room.", "课堂里没有提过问题。"),
    "report_question_no": ("Q{no}.", "第 {no} 题。"),
    "report_right_tag": ("right", "正确"),
    "report_common_wrong_tag": ("most common wrong answer", "最常见的错误答案"),
    "report_answered": ("{answered} of {seated} seats answered; {right} right ({share}).",
                        "{seated} 个座位中有 {answered} 个回答；{right} 个正确（{share}）。"),
    "report_not_revealed": ("Not revealed: {answered} of {seated} seats had answered.",
                            "未揭晓：{seated} 个座位中有 {answered} 个已回答。"),
    "report_most_wrong": ("Most common wrong answer: {answer} ({n}).", "最常见的错误答案：{answer}（{n} 个）。"),
    "report_lapsed": ("{n} answers from seats that had lapsed were not counted (as the room did not count them).",
                      "有 {n} 个回答来自已失效的座位，没有计入（课堂当时也没有计入）。"),
    "report_draws": ("The class as the sampler", "全班当采样器"),
    "report_no_draws": ("The class drew no tokens.", "全班没有抽过词元。"),
    "report_round": ("Round {no}: T = {temperature}, {n} draws", "第 {no} 轮：T = {temperature}，{n} 次抽样"),
    "report_other_tokens": ("other tokens", "其他词元"),
    "report_class_draws": ("the class's draws", "全班的抽样"),
    "report_expected": ("what p expects", "按 p 的期望"),
    "report_draws_stats": ("χ² = {chi2} with {dof} degrees of freedom, p-value {p}, total variation {tv}.",
                           "χ² = {chi2}，自由度 {dof}，p 值 {p}，总变差 {tv}。"),
    "report_draws_few": ("Only {n} draws: too few to judge.", "只有 {n} 次抽样：太少，无法判断。"),
    "report_draws_fits": ("The draws fit the model's distribution: a class drawing from p looks this far off {p} of "
                          "the time.", "抽样结果符合模型的分布：从 p 抽样的班级有 {p} 的时候会偏离这么多。"),
    "report_draws_off": ("The draws are further from p than chance alone makes likely (p-value {p}).",
                         "抽样结果比偶然情况下更偏离 p（p 值 {p}）。"),
    "report_games": ("Beat the model", "和模型比赛"),
    "report_no_games": ("No game was played.", "没有玩过游戏。"),
    "report_game": ("Game {no}: {text}", "第 {no} 局：{text}"),
    "report_class_bits": ("the class's bits", "全班的比特"),
    "report_model_bits": ("the model's bits", "模型的比特"),
    "report_game_totals": ("Over {n} tokens: the class {klass} bits, the model {model} bits (fewer is better).",
                           "共 {n} 个词元：全班 {klass} 比特，模型 {model} 比特（越少越好）。"),
    "report_class_wins": ("The class beat the model.", "全班赢了模型。"),
    "report_model_wins": ("The model beat the class.", "模型赢了全班。"),
    "report_joined": ("Who joined when ({n} seats: number, the name they typed)",
                      "谁在什么时候加入（{n} 个座位：座位号、自己输入的名字）"),
    "report_no_seats": ("No one joined.", "没有人加入。"),
    "report_minute": ("min {start}–{end}", "第 {start}–{end} 分钟"),
    "report_seat_at": ("joined at min {minute}", "第 {minute} 分钟加入"),
})


def t(key: str, lang: str = "en", **fmt) -> str:
    """The text for `key` in `lang` ("en" or "zh", else ValueError), with {placeholders} filled from `fmt`."""
    return lookup(WORDS, key, lang, fmt, "WORDS in viz/i18n.py")


def counted(n: int, one: str, many: str, lang: str = "en") -> str:
    """The text for a count of `n` (its {n}): key `one` when n is 1 ("1 session", not "1 sessions"), else `many`."""
    return t(one if n == 1 else many, lang, n=n)
