"""Every word the page shows, in English and Simplified Chinese: one table, looked up with t()."""
from __future__ import annotations

LANGS = ("en", "zh")

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        # --- fates of a candidate (one colour each, see viz/style.py) ---
        "fate_chosen": "chosen",
        "fate_kept": "kept",
        "fate_top_k": "cut by top-k",
        "fate_top_p": "cut by top-p",
        "fate_min_p": "cut by min-p",
        "fate_greedy": "not the argmax (greedy)",
        # --- sampling stages, as named in hovers ---
        "stage_repetition_penalty": "repetition penalty",
        "stage_temperature": "temperature",
        "stage_top_k": "top-k",
        "stage_top_p": "top-p",
        "stage_min_p": "min-p",
        # --- candidate figure ---
        "cand_title": "Next token (position {position}): the draw picks {token}",
        "cand_title_forced": "Next token (position {position}): you forced {token}",
        "cand_panel_bars": "Probability of each candidate",
        "cand_panel_draw": "The draw: u = {u} lands on one token",
        "cand_panel_greedy": "T = 0: no draw, the most probable token is taken",
        "cand_axis_prob": "probability",
        "cand_axis_cum": "cumulative probability (draw order)",
        "cand_legend_t1": "outline: probability at T = 1",
        "cand_legend_after_top_p": "running total before the top-p cut",
        "cand_u_line": "u = {u}",
        "cand_top_p_line": "top-p = {p}",
        "cand_others": "all other tokens",
        "cand_gap": "… {n} more",
        "cand_subtitle": (
            "Not shown: {tail_t1} at T = 1, {tail_final} after the settings · "
            "entropy {h_t1} bits at T = 1 → {h_final} bits after · tokens kept: {kept}"
        ),
        "cand_chosen_note": "{token}: {prob} at T = 1 (log p = {logprob}), rank {rank}",
        "hover_token": "token",
        "hover_id": "id",
        "hover_rank": "rank",
        "hover_logit": "logit",
        "hover_t1": "at T = 1",
        "hover_after": "after {stage}",
        "hover_final": "final",
        "hover_fate": "fate",
        "hover_segment": "from {start} to {end} on the running total",
        # --- temperature figure ---
        "temp_title": "Temperature reshapes the same logits",
        "temp_subtitle": "The same step at several temperatures; the other settings are held (top-p = {p}).",
        "temp_panel": "T = {t}",
        "temp_panel_greedy": "T = 0 (greedy)",
        "temp_current": "{panel} ← current",
        "temp_axis_prob": "final probability",
        "temp_axis_t": "temperature T",
        "temp_entropy": "entropy (bits)",
        "temp_nucleus": "tokens kept (log scale)",
        "temp_entropy_panel": "How spread out the choice is",
        "temp_nucleus_panel": "How many tokens can still be drawn",
        "temp_current_line": "current T = {t}",
        # --- attention figure ---
        "attn_title_head": "Layer {layer}, head {head}: reads KV head {kv_head} (grouped-query attention, {group} query heads per KV head)",
        "attn_title_mean": "Layer {layer}, mean over {heads} heads",
        "attn_title_mha": "Layer {layer}, head {head} (multi-head attention: its own KV head)",
        "attn_axis_query": "query: the token that is looking (row)",
        "attn_axis_key": "key: the token looked at (column)",
        "attn_weight": "weight",
        "attn_future": "future: masked (−∞ before softmax → weight 0)",
        "attn_future_short": "future",
        "attn_window": "outside the sliding window of {window}: masked",
        "attn_newest": "newest token (last row)",
        "attn_hover": "query {qpos} {qtok}<br>key {kpos} {ktok}<br>weight {w}",
        "gqa_title": "Grouped-query attention: {heads} query heads share {kv_heads} KV heads (groups of {group})",
        "gqa_query": "query head {h}",
        "gqa_kv": "KV head {k}",
        "gqa_row_query": "query heads",
        "gqa_row_kv": "KV heads (cached)",
        # --- KV cache figures ---
        "kv_title": "KV cache size as the text grows",
        "kv_subtitle": "per token: 2 × {layers} layers × {kv_heads} KV heads × {head_dim} × {bpv} B = {per_token}",
        "kv_axis_tokens": "tokens in the cache",
        "kv_axis_bytes": "cache size ({unit})",
        "kv_keys": "K (measured)",
        "kv_values": "V (measured)",
        "kv_formula": "formula",
        "kv_prefill": "prompt (prefill): {n} tokens",
        "kv_hover": "{tokens} tokens<br>measured {measured} (K {keys} + V {values})<br>formula {formula}",
        "timing_title": "Time per step: with a KV cache vs recomputing the whole prefix",
        "timing_subtitle": "With a cache a step still reads all t keys and values: O(t). Without one it redoes the prefix: O(t²) attention.",
        "timing_axis_len": "tokens in the sequence",
        "timing_axis_ms": "time per step (ms)",
        "timing_cached": "with KV cache",
        "timing_full": "without cache (recompute prefix)",
        "timing_hover": "{n} tokens: {ms} ms",
        "calc_title": "KV cache size for different models and settings",
        "calc_subtitle": "bytes = 2 (K and V) × layers × KV heads × head dim × tokens × bytes per value × batch",
        "calc_axis": "cache size ({unit})",
        # --- token chips ---
        "chips_title": "Step {step} · rank {rank} · probability {prob} at T = 1",
        "chips_forced": "forced by you",
        "chips_prompt": "prompt token",
        "chips_legend": "Grey outline: your prompt. Blue: written by the model, darker = the model found it more likely (T = 1). Dashed: forced by you. Click a token to go back to that step.",
        # --- short explanations, one per view ---
        "explain_candidates": (
            "At every step the model gives a probability to every token it knows; the bars show the most likely ones. "
            "Your settings cut some tokens away and share their probability among the rest. "
            "Then a random number u is laid on the running total, and the token whose stretch it lands in is written."
        ),
        "explain_temperature": (
            "Temperature divides the scores (logits) before they become probabilities. "
            "Below 1 the favourite gets even more of the probability, and T = 0 simply takes the top token; "
            "above 1 the bars flatten and unlikely tokens get a real chance."
        ),
        "explain_attention": (
            "Each row is one token looking back at the tokens before it: it can never see the future, "
            "because those scores are set to −∞ so their weights become 0, and each row adds up to 1. "
            "The first token often gets a large share (an 'attention sink'); that is normal, and a weight is not an explanation."
        ),
        "explain_kv_cache": (
            "To write the next token, every layer needs the keys and values of all earlier tokens. "
            "The model keeps them in the KV cache instead of computing them again, "
            "so the cache grows by the same number of bytes with every token: 2 × layers × KV heads × head dim × bytes per value."
        ),
        "explain_cache_timing": (
            "Without a cache, every step runs the whole text through the model again, so steps get slower and slower. "
            "With a cache only the new token goes through, but its attention still reads every earlier key and value, "
            "so a step still grows a little with the length: O(t), not O(1)."
        ),
        "explain_kv_calculator": (
            "The same formula works for any model: bytes = 2 × layers × KV heads × head dim × tokens × bytes per value × batch. "
            "Grouped-query attention lets several query heads share one KV head, so the cache shrinks by that factor: "
            "Llama-2-7B needs 1 GiB for 2,048 tokens in fp16, Llama-3-8B fits 8,192 tokens in the same 1 GiB."
        ),
        "explain_gqa": (
            "In grouped-query attention several query heads read the same keys and values. "
            "Query head h reads KV head h ÷ (query heads per KV head), rounded down, so only the KV heads are cached."
        ),
        # --- UI labels for app.py ---
        "app_title": "Token by Token",
        "prompt": "Prompt",
        "examples": "Examples",
        "mode": "Input mode",
        "mode_chat": "Chat template",
        "mode_raw": "Raw continuation",
        "model": "Model",
        "temperature": "Temperature (0 = greedy)",
        "top_k": "Top-k (0 = off)",
        "top_p": "Top-p (1 = off)",
        "min_p": "Min-p (0 = off)",
        "repetition_penalty": "Repetition penalty (1 = off)",
        "order": "Order of the stages",
        "order_transformers": "transformers order (temperature first)",
        "order_temperature_last": "temperature last (llama.cpp)",
        "seed": "Seed",
        "btn_next": "Next token",
        "btn_play": "Play",
        "btn_pause": "Pause",
        "btn_back": "Back",
        "btn_reset": "Reset",
        "btn_force": "Force this token",
        "btn_export": "Export",
        "btn_import": "Import",
        "language": "Language",
        "layer": "Layer",
        "head": "Head",
        "mean_over_heads": "Mean over heads",
        "head_choice": "head {head} → KV head {kv_head}",
        "msg_replaying": "Playing back a saved session: {n} recorded steps left (Next token takes the next one; any other action leaves the recording).",
        "msg_loading": "Loading the model…",
        "msg_ready": "Ready. Type a prompt and press Next token.",
        "msg_end_of_text": "The model wrote its end-of-text token.",
        "msg_context_full": "The context window is full ({n} tokens).",
        "msg_invalid_setting": "Setting out of range: {detail}",
        "msg_forced": "You forced {token} at step {step}.",
        "msg_exported": "Exported {n} steps.",
        "msg_imported": "Imported {n} steps.",
        "msg_import_failed": "Could not import that file: {detail}",
        "msg_empty_prompt": "Type a prompt first.",
        "msg_nothing_to_undo": "Nothing to go back to.",
        "status_line": "Step {step} · {tokens} of {max_tokens} tokens · KV cache {size} ({measured} B measured, {formula} B by the formula) · log p(text) = {logprob}",
        "subtitle": "See a language model write one token at a time: the candidates, what the settings do to them, attention and the KV cache.",
        "btn_start": "Start",
        "btn_measure": "Measure now",
        "play_steps": "Tokens to play",
        "force_label": "Pick another candidate",
        "tab_candidates": "Candidates",
        "tab_temperature": "Temperature",
        "tab_attention": "Attention",
        "tab_kv": "KV cache",
        "tab_calculator": "KV calculator",
        "tab_session": "Save / load",
        "sampling": "Sampling settings",
        "calc_preset": "Preset",
        "calc_layers": "Layers",
        "calc_kv_heads": "KV heads",
        "calc_heads": "Query heads",
        "calc_head_dim": "Head size",
        "calc_dtype": "Data type",
        "calc_tokens": "Tokens",
        "calc_batch": "Batch",
        "calc_result": "{bytes} B = {size}",
        "calc_mha": "MHA ({heads} KV heads)",
        "calc_gqa": "GQA ({kv_heads} KV heads)",
        "calc_mqa": "MQA (1 KV head)",
        "timing_empty": "Press “Measure now” to time one step with and without the cache at several lengths of this text.",
        "trace_file": "Trace file (JSON)",
        "shortcuts": "Keys: → or N = next token, ← or B = back, P = play / pause.",
        "msg_busy": "The server is busy; try again in a moment.",
    },
    "zh": {
        "head_choice": "头 {head} → KV 头 {kv_head}",
        "msg_replaying": "正在回放保存的会话：还剩 {n} 步（“下一个词元”走下一步；其他操作会离开回放）。",
        "status_line": "第 {step} 步 · {tokens}/{max_tokens} 个词元 · KV 缓存 {size}（实测 {measured} B，公式 {formula} B）· 文本对数概率 = {logprob}",
        "subtitle": "看语言模型如何一次写一个词元：候选词元、采样设置对它们的影响、注意力和 KV 缓存。",
        "btn_start": "开始",
        "btn_measure": "现在测量",
        "play_steps": "自动播放的词元数",
        "force_label": "换一个候选词元",
        "tab_candidates": "候选词元",
        "tab_temperature": "温度",
        "tab_attention": "注意力",
        "tab_kv": "KV 缓存",
        "tab_calculator": "KV 计算器",
        "tab_session": "保存 / 载入",
        "sampling": "采样设置",
        "calc_preset": "预设",
        "calc_layers": "层数",
        "calc_kv_heads": "KV 头数",
        "calc_heads": "查询头数",
        "calc_head_dim": "每个头的维度",
        "calc_dtype": "数据类型",
        "calc_tokens": "词元数",
        "calc_batch": "批大小",
        "calc_result": "{bytes} B = {size}",
        "calc_mha": "MHA（{heads} 个 KV 头）",
        "calc_gqa": "GQA（{kv_heads} 个 KV 头）",
        "calc_mqa": "MQA（1 个 KV 头）",
        "timing_empty": "点击“现在测量”，在这段文本的几个长度上分别测一步有缓存和无缓存的耗时。",
        "trace_file": "记录文件（JSON）",
        "shortcuts": "快捷键：→ 或 N = 下一个词元，← 或 B = 后退，P = 播放 / 暂停。",
        "msg_busy": "服务器正忙，请稍后再试。",
        "fate_chosen": "被选中",
        "fate_kept": "保留",
        "fate_top_k": "被 top-k 截掉",
        "fate_top_p": "被 top-p 截掉",
        "fate_min_p": "被 min-p 截掉",
        "fate_greedy": "不是最大值（贪心）",
        "stage_repetition_penalty": "重复惩罚",
        "stage_temperature": "温度",
        "stage_top_k": "top-k",
        "stage_top_p": "top-p",
        "stage_min_p": "min-p",
        "cand_title": "下一个词元（位置 {position}）：抽取结果是 {token}",
        "cand_title_forced": "位置 {position} 的下一个词元：你强制选了 {token}",
        "cand_panel_bars": "每个候选词元的概率",
        "cand_panel_draw": "抽取：u = {u} 落在某一个词元上",
        "cand_panel_greedy": "T = 0：不抽取，直接取概率最高的词元",
        "cand_axis_prob": "概率",
        "cand_axis_cum": "累积概率（抽取顺序）",
        "cand_legend_t1": "空心框：T = 1 时的概率",
        "cand_legend_after_top_p": "top-p 截断前的累积和",
        "cand_u_line": "u = {u}",
        "cand_top_p_line": "top-p = {p}",
        "cand_others": "其余所有词元",
        "cand_gap": "…… 另外 {n} 个",
        "cand_subtitle": (
            "未显示部分：T = 1 时 {tail_t1}，设置后 {tail_final} · "
            "熵：T = 1 时 {h_t1} 比特 → 设置后 {h_final} 比特 · 保留 {kept} 个词元"
        ),
        "cand_chosen_note": "{token}：T = 1 时概率 {prob}（log p = {logprob}），排名 {rank}",
        "hover_token": "词元",
        "hover_id": "编号",
        "hover_rank": "排名",
        "hover_logit": "logit",
        "hover_t1": "T = 1 时",
        "hover_after": "{stage}之后",
        "hover_final": "最终",
        "hover_fate": "结果",
        "hover_segment": "累积和上从 {start} 到 {end}",
        "temp_title": "温度改变同一组 logits 的形状",
        "temp_subtitle": "同一步在不同温度下的样子；其他设置保持不变（top-p = {p}）。",
        "temp_panel": "T = {t}",
        "temp_panel_greedy": "T = 0（贪心）",
        "temp_current": "{panel} ← 当前",
        "temp_axis_prob": "最终概率",
        "temp_axis_t": "温度 T",
        "temp_entropy": "熵（比特）",
        "temp_nucleus": "保留的词元数（对数刻度）",
        "temp_entropy_panel": "选择有多分散",
        "temp_nucleus_panel": "还有多少词元可能被抽到",
        "temp_current_line": "当前 T = {t}",
        "attn_title_head": "第 {layer} 层，第 {head} 个头：读取第 {kv_head} 个 KV 头（分组查询注意力，每个 KV 头对应 {group} 个查询头）",
        "attn_title_mean": "第 {layer} 层，{heads} 个头的平均",
        "attn_title_mha": "第 {layer} 层，第 {head} 个头（多头注意力：有自己的 KV 头）",
        "attn_axis_query": "查询：正在“看”的词元（行）",
        "attn_axis_key": "键：被看的词元（列）",
        "attn_weight": "权重",
        "attn_future": "未来：被遮蔽（softmax 前设为 −∞ → 权重为 0）",
        "attn_future_short": "未来",
        "attn_window": "在 {window} 的滑动窗口之外：被遮蔽",
        "attn_newest": "最新的词元（最后一行）",
        "attn_hover": "查询 {qpos} {qtok}<br>键 {kpos} {ktok}<br>权重 {w}",
        "gqa_title": "分组查询注意力：{heads} 个查询头共用 {kv_heads} 个 KV 头（每组 {group} 个）",
        "gqa_query": "查询头 {h}",
        "gqa_kv": "KV 头 {k}",
        "gqa_row_query": "查询头",
        "gqa_row_kv": "KV 头（被缓存）",
        "kv_title": "文本变长时 KV 缓存的大小",
        "kv_subtitle": "每个词元：2 × {layers} 层 × {kv_heads} 个 KV 头 × {head_dim} × {bpv} B = {per_token}",
        "kv_axis_tokens": "缓存中的词元数",
        "kv_axis_bytes": "缓存大小（{unit}）",
        "kv_keys": "K（实测）",
        "kv_values": "V（实测）",
        "kv_formula": "公式",
        "kv_prefill": "提示词（预填充）：{n} 个词元",
        "kv_hover": "{tokens} 个词元<br>实测 {measured}（K {keys} + V {values}）<br>公式 {formula}",
        "timing_title": "每一步的时间：使用 KV 缓存 vs 重新计算整个前缀",
        "timing_subtitle": "有缓存时，每一步仍要读取全部 t 个键和值：O(t)。没有缓存时要重算整个前缀：注意力为 O(t²)。",
        "timing_axis_len": "序列中的词元数",
        "timing_axis_ms": "每一步的时间（毫秒）",
        "timing_cached": "使用 KV 缓存",
        "timing_full": "不用缓存（重算前缀）",
        "timing_hover": "{n} 个词元：{ms} 毫秒",
        "calc_title": "不同模型和设置下的 KV 缓存大小",
        "calc_subtitle": "字节 = 2（K 和 V）× 层数 × KV 头数 × 头维度 × 词元数 × 每个值的字节数 × 批大小",
        "calc_axis": "缓存大小（{unit}）",
        "chips_title": "第 {step} 步 · 排名 {rank} · T = 1 时概率 {prob}",
        "chips_forced": "由你强制选择",
        "chips_prompt": "提示词中的词元",
        "chips_legend": "灰色边框：你的提示词。蓝色：模型写出的词元，颜色越深表示模型认为它越可能（T = 1）。虚线框：由你强制选择。点击一个词元可回到那一步。",
        "explain_candidates": (
            "每一步，模型都会给词表里的每个词元一个概率；柱子显示的是最可能的那些。"
            "你的设置会截掉一部分词元，并把它们的概率分给剩下的词元。"
            "然后把一个随机数 u 放到累积和上，u 落在哪个词元的区间里，就写出哪个词元。"
        ),
        "explain_temperature": (
            "温度在分数（logits）变成概率之前去除它们。"
            "温度低于 1 时，最可能的词元会得到更多概率，T = 0 就直接选最高的词元；"
            "温度高于 1 时，柱子变得更平，不太可能的词元也有了真正的机会。"
        ),
        "explain_attention": (
            "每一行是一个词元在回看它之前的词元：它永远看不到未来，"
            "因为这些分数被设为 −∞，权重就变成 0，而且每一行加起来等于 1。"
            "第一个词元常常得到很大的份额（“注意力汇聚点”），这是正常的；权重并不等于解释。"
        ),
        "explain_kv_cache": (
            "要写出下一个词元，每一层都需要之前所有词元的键和值。"
            "模型把它们存在 KV 缓存里，而不是重新计算，"
            "所以每多一个词元，缓存就增加同样多的字节：2 × 层数 × KV 头数 × 头维度 × 每个值的字节数。"
        ),
        "explain_cache_timing": (
            "没有缓存时，每一步都要把整段文本重新送进模型，所以越来越慢。"
            "有缓存时只需处理新词元，但它的注意力仍要读取之前所有的键和值，"
            "所以每一步仍会随长度略微变慢：是 O(t)，不是 O(1)。"
        ),
        "explain_kv_calculator": (
            "同一个公式适用于任何模型：字节 = 2 × 层数 × KV 头数 × 头维度 × 词元数 × 每个值的字节数 × 批大小。"
            "分组查询注意力让几个查询头共用一个 KV 头，缓存就按这个倍数缩小："
            "Llama-2-7B 用 fp16 存 2,048 个词元需要 1 GiB，Llama-3-8B 在同样的 1 GiB 里能放 8,192 个词元。"
        ),
        "explain_gqa": (
            "在分组查询注意力中，几个查询头读取同一组键和值。"
            "查询头 h 读取 KV 头 h ÷（每个 KV 头对应的查询头数）向下取整，所以只需缓存 KV 头。"
        ),
        "app_title": "逐词生成",
        "prompt": "提示词",
        "examples": "示例",
        "mode": "输入方式",
        "mode_chat": "对话模板",
        "mode_raw": "直接续写",
        "model": "模型",
        "temperature": "温度（0 = 贪心）",
        "top_k": "Top-k（0 = 关闭）",
        "top_p": "Top-p（1 = 关闭）",
        "min_p": "Min-p（0 = 关闭）",
        "repetition_penalty": "重复惩罚（1 = 关闭）",
        "order": "各步骤的顺序",
        "order_transformers": "transformers 顺序（温度在前）",
        "order_temperature_last": "温度在最后（llama.cpp）",
        "seed": "随机种子",
        "btn_next": "下一个词元",
        "btn_play": "播放",
        "btn_pause": "暂停",
        "btn_back": "后退",
        "btn_reset": "重置",
        "btn_force": "强制选这个词元",
        "btn_export": "导出",
        "btn_import": "导入",
        "language": "语言",
        "layer": "层",
        "head": "注意力头",
        "mean_over_heads": "所有头的平均",
        "msg_loading": "正在加载模型……",
        "msg_ready": "准备好了。输入提示词，然后点“下一个词元”。",
        "msg_end_of_text": "模型写出了结束符。",
        "msg_context_full": "上下文窗口已满（{n} 个词元）。",
        "msg_invalid_setting": "设置超出范围：{detail}",
        "msg_forced": "你在第 {step} 步强制选了 {token}。",
        "msg_exported": "已导出 {n} 步。",
        "msg_imported": "已导入 {n} 步。",
        "msg_import_failed": "无法导入这个文件：{detail}",
        "msg_empty_prompt": "请先输入提示词。",
        "msg_nothing_to_undo": "没有可以后退的步骤。",
    },
}


def t(key: str, lang: str = "en", **fmt) -> str:
    """The text for `key` in `lang` ("en" or "zh"), with {placeholders} filled from `fmt`."""
    if lang not in STRINGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    table = STRINGS[lang]
    if key not in table:
        raise KeyError(f"no string {key!r} for {lang!r}: add it to STRINGS['en'] and STRINGS['zh'] in viz/i18n.py")
    return table[key].format(**fmt) if fmt else table[key]
