"""Every word the page itself shows (labels, explanations, the status line, its own refusals), in English and
Simplified Chinese side by side, and t(), which says anything the user can see in the page's language.

The figures' words are in viz/i18n.py, the engine's refusals in model/errors.py; t() finds a key in any of the
three tables and reads it with the one lookup all three use (model/words.py).
"""
from __future__ import annotations

from model.errors import MESSAGES, SessionError
from model.words import LANGS, lang_of, lookup  # noqa: F401  (LANGS, lang_of: the page's imports of them)
from viz.i18n import WORDS

LANG_INPUT = "tbt-lang"  # elem_id of the page's language radio: the input that says which language an event speaks

# key: (English, Simplified Chinese). Placeholders are the same in both.
PAGE: dict[str, tuple[str, str]] = {
    # --- the page's own refusals (ui.strings.Refusal) ---
    "bad_view": ("Layer must be a whole number and head a number or 'mean', got {layer} and {head}.",
                 "层必须是整数，注意力头必须是数字或 'mean'，收到的是 {layer} 和 {head}。"),
    "not_whole": ("{name} must be a whole number, got {value}.", "{name}必须是整数，收到的是 {value}。"),
    "force_pick_first": ("Pick a candidate in the list first, then press Force.",
                         "请先在列表中选一个候选词元，再点“强制选这个词元”。"),
    "bug": ("Something went wrong ({kind}); your session is unchanged.", "出了点问题（{kind}）；你的会话没有改变。"),
    "import_no_file": ("Could not import that file: upload a trace file (JSON) from your computer.",
                       "无法导入：请从你的电脑上传一个记录文件（JSON）。"),
    "import_too_big": ("Could not import that file: a trace is at most {limit} bytes.",
                       "无法导入：记录文件最多 {limit} 字节。"),
    # refused before a handler runs (ui/guard.py): in the event's language, or in both when it has none
    "queue_busy": ("You already have {n} requests waiting; wait for them to finish.", "你已有 {n} 个请求在等待，请等它们完成。"),
    "queue_slow_busy": ("Your previous request of this kind is still running; wait for it to finish.",
                        "你上一个同类请求还在进行，请等它完成。"),
    "no_such_event": ("No such event.", "没有这个事件。"),
    # a number outside its slider's range (the named_range patch, said by plain_preprocess_data): Gradio's words, named
    "range_below": ("{name}: Value {value} is less than minimum value {low}.", "{name}：数值 {value} 小于最小值 {low}。"),
    "range_above": ("{name}: Value {value} is greater than maximum value {high}.", "{name}：数值 {value} 大于最大值 {high}。"),
    "input_count": ("This event takes {expected} inputs; {sent} were sent.", "这个事件需要 {expected} 个输入，收到 {sent} 个。"),
    "not_uploaded": ("That file was not uploaded here: choose it with the Import button.",
                     "这个文件不是上传到这里的：请用“导入”按钮选择它。"),
    # --- an input its control cannot read, said by ui/guard.py input_refusal (never Gradio's words; issue 46) ---
    "input_not_a_choice": ("{name}: {value} is not one of its choices.", "{name}：{value} 不是它的选项之一。"),
    "input_not_a_number": ("{name} must be a number, got {value}.", "{name}必须是数字，收到的是 {value}。"),
    "input_unreadable": ("{name}: this value cannot be read here: {value}.", "{name}：无法读取这个值：{value}。"),
    "input_unreadable_any": ("One of this event's inputs cannot be read here.", "这个事件的一个输入无法在这里读取。"),
    "input_unnamed": ("Input {n}", "第 {n} 个输入"),
    "api_arguments": ("These values are not this event's: its parameters are on the API page.",
                      "这些值不是这个事件的参数：它的参数见 API 页面。"),
    "queue_full": ("The server's queue is full; try again in a few seconds.", "服务器的队列已满，请过几秒再试。"),
    "bad_headers": ("This request's headers name no address the server can read (Host, X-Forwarded-Host); it was "
                    "refused.", "这个请求的请求头（Host、X-Forwarded-Host）给出的地址服务器无法读取，已拒绝。"),
    "steps": ("Steps to go back", "后退的步数"),
    "step": ("Step", "步数"),

    "explain_candidates": (
        "At every step the model gives a probability to every token it knows; the bars show the most likely ones. Your settings cut some tokens away and share their probability among the rest. Then a random number u is laid on the running total, and the token whose stretch it lands in is written.",
        "每一步，模型都会给词表里的每个词元一个概率；柱子显示的是最可能的那些。你的设置会截掉一部分词元，并把它们的概率分给剩下的词元。然后把一个随机数 u 放到累积和上，u 落在哪个词元的区间里，就写出哪个词元。",
    ),
    "explain_temperature": (
        "Temperature divides the scores (logits) before they become probabilities. Below 1 the favourite gets even more of the probability, and T = 0 simply takes the top token; above 1 the bars flatten and unlikely tokens get a real chance.",
        "温度在分数（logits）变成概率之前去除它们。温度低于 1 时，最可能的词元会得到更多概率，T = 0 就直接选最高的词元；温度高于 1 时，柱子变得更平，不太可能的词元也有了真正的机会。",
    ),
    "explain_attention": (
        "Each row is one token looking back at the tokens before it: it can never see the future, because those scores are set to −∞ so their weights become 0, and each row adds up to 1. The first token often gets a large share (an 'attention sink'); that is normal, and a weight is not an explanation.",
        "每一行是一个词元在回看它之前的词元：它永远看不到未来，因为这些分数被设为 −∞，权重就变成 0，而且每一行加起来等于 1。第一个词元常常得到很大的份额（“注意力汇聚点”），这是正常的；权重并不等于解释。",
    ),
    "explain_kv_cache": (
        "To write the next token, every layer needs the keys and values of all earlier tokens. The model keeps them in the KV cache instead of computing them again, so the cache grows by the same number of bytes with every token: 2 × layers × KV heads × head dim × bytes per value.",
        "要写出下一个词元，每一层都需要之前所有词元的键和值。模型把它们存在 KV 缓存里，而不是重新计算，所以每多一个词元，缓存就增加同样多的字节：2 × 层数 × KV 头数 × 头维度 × 每个值的字节数。",
    ),
    "explain_cache_timing": (
        "Without a cache, every step runs the whole text through the model again, so steps get slower and slower. With a cache only the new token goes through, but its attention still reads every earlier key and value, so a step still grows a little with the length: O(t), not O(1).",
        "没有缓存时，每一步都要把整段文本重新送进模型，所以越来越慢。有缓存时只需处理新词元，但它的注意力仍要读取之前所有的键和值，所以每一步仍会随长度略微变慢：是 O(t)，不是 O(1)。",
    ),
    "explain_kv_calculator": (
        "The same formula works for any model: bytes = 2 × layers × KV heads × head dim × tokens × bytes per value × batch. Grouped-query attention lets several query heads share one KV head, so the cache shrinks by that factor: Llama-2-7B needs 1 GiB for 2,048 tokens in fp16, Llama-3-8B fits 8,192 tokens in the same 1 GiB.",
        "同一个公式适用于任何模型：字节 = 2 × 层数 × KV 头数 × 头维度 × 词元数 × 每个值的字节数 × 批大小。分组查询注意力让几个查询头共用一个 KV 头，缓存就按这个倍数缩小：Llama-2-7B 用 fp16 存 2,048 个词元需要 1 GiB，Llama-3-8B 在同样的 1 GiB 里能放 8,192 个词元。",
    ),
    "explain_gqa": (
        "In grouped-query attention several query heads read the same keys and values. Query head h reads KV head h ÷ (query heads per KV head), rounded down, so only the KV heads are cached.",
        "在分组查询注意力中，几个查询头读取同一组键和值。查询头 h 读取 KV 头 h ÷（每个 KV 头对应的查询头数）向下取整，所以只需缓存 KV 头。",
    ),


    "prompt": ("Prompt", "提示词"),

    "examples": ("Examples", "示例"),

    "mode": ("Input mode", "输入方式"),
    "mode_chat": ("Chat template", "对话模板"),
    "mode_raw": ("Raw continuation", "直接续写"),

    "model": ("Model", "模型"),

    "temperature": ("Temperature (0 = greedy)", "温度（0 = 贪心）"),

    "top_k": ("Top-k (0 = off)", "Top-k（0 = 关闭）"),
    "top_p": ("Top-p (1 = off)", "Top-p（1 = 关闭）"),

    "min_p": ("Min-p (0 = off)", "Min-p（0 = 关闭）"),

    "repetition_penalty": ("Repetition penalty (1 = off)", "重复惩罚（1 = 关闭）"),

    "order": ("Order of the stages", "各步骤的顺序"),
    "order_transformers": ("transformers order (temperature first)", "transformers 顺序（温度在前）"),
    "order_temperature_last": ("temperature last (llama.cpp)", "温度在最后（llama.cpp）"),

    "seed": ("Seed", "随机种子"),

    "btn_next": ("Next token", "下一个词元"),
    "btn_play": ("Play", "播放"),
    "btn_back": ("Back", "后退"),
    "btn_reset": ("Reset", "重置"),
    "btn_force": ("Force this token", "强制选这个词元"),
    "btn_export": ("Export", "导出"),
    "btn_import": ("Import", "导入"),

    "language": ("Language", "语言"),

    "layer": ("Layer", "层"),

    "head": ("Head", "注意力头"),

    "mean_over_heads": ("Mean over heads", "所有头的平均"),

    "head_choice": ("head {head} → KV head {kv_head}", "头 {head} → KV 头 {kv_head}"),

    "msg_replaying": (
        "Playing back a saved session: {n} recorded steps left (Next token takes the next one; any other action leaves the recording).",
        "正在回放保存的会话：还剩 {n} 步（“下一个词元”走下一步；其他操作会离开回放）。",
    ),
    "msg_end_of_text": ("The model wrote its end-of-text token.", "模型写出了结束符。"),

    "status_line_formula": (
        "Step {step} · {tokens} of {max_tokens} tokens · KV cache {size} by the formula (the engine holds the "
        "tensors) · log p(text) = {logprob}",
        "第 {step} 步 · {tokens}/{max_tokens} 个词元 · 按公式 KV 缓存 {size}（张量在引擎里）· 文本对数概率 = {logprob}",
    ),
    "status_line": (
        "Step {step} · {tokens} of {max_tokens} tokens · KV cache {size} ({measured} B measured, {formula} B by the formula) · log p(text) = {logprob}",
        "第 {step} 步 · {tokens}/{max_tokens} 个词元 · KV 缓存 {size}（实测 {measured} B，公式 {formula} B）· 文本对数概率 = {logprob}",
    ),

    "subtitle": (
        "See a language model write one token at a time: the candidates, what the settings do to them, attention and the KV cache.",
        "看语言模型如何一次写一个词元：候选词元、采样设置对它们的影响、注意力和 KV 缓存。",
    ),

    "btn_start": ("Start", "开始"),
    "btn_measure": ("Measure now", "现在测量"),

    "play_steps": ("Tokens to play", "自动播放的词元数"),

    "force_label": ("Pick another candidate", "换一个候选词元"),

    "tab_candidates": ("Candidates", "候选词元"),
    "tab_temperature": ("Temperature", "温度"),
    "tab_attention": ("Attention", "注意力"),
    "tab_kv": ("KV cache", "KV 缓存"),
    "tab_calculator": ("KV calculator", "KV 计算器"),
    "tab_session": ("Save / load", "保存 / 载入"),

    "sampling": ("Sampling settings", "采样设置"),

    "calc_preset": ("Preset", "预设"),
    "calc_layers": ("Layers", "层数"),
    "calc_kv_heads": ("KV heads", "KV 头数"),
    "calc_heads": ("Query heads", "查询头数"),
    "calc_head_dim": ("Head size", "每个头的维度"),
    "calc_dtype": ("Data type", "数据类型"),
    "calc_tokens": ("Tokens", "词元数"),
    "calc_batch": ("Batch", "批大小"),
    "calc_result": ("{bytes} B = {size}", "{bytes} B = {size}"),
    "calc_per_token": (
        "**{per_token} B per token** (per sequence): 2 (K and V) × {layers} layers × {kv_heads} KV heads × {head_dim} × {value_bytes} B per value ({dtype}).",
        "**每个词元 {per_token} B**（每个序列）：2（K 和 V）× {layers} 层 × {kv_heads} 个 KV 头 × {head_dim} × 每个值 {value_bytes} B（{dtype}）。",
    ),
    "calc_mha": ("the same model if it used<br>MHA ({heads} KV heads)", "同一模型若用<br>MHA（{heads} 个 KV 头）"),
    "calc_gqa": ("the same model if it used<br>GQA ({kv_heads} KV heads)", "同一模型若用<br>GQA（{kv_heads} 个 KV 头）"),
    "calc_mqa": ("the same model if it used<br>MQA (1 KV head)", "同一模型若用<br>MQA（1 个 KV 头）"),

    "timing_empty": (
        "Press “Measure now” to time one step with and without the cache at several lengths of this text.",
        "点击“现在测量”，在这段文本的几个长度上分别测一步有缓存和无缓存的耗时。",
    ),

    "trace_file": ("Trace file (JSON)", "记录文件（JSON）"),

    "shortcuts": (
        "Keys (a clicker's too): PageDown, → or N = next token; PageUp or ← = back; P = play / pause; "
        ". or B = blank the chart area (again: show it); ? = these keys.",
        "快捷键（翻页笔也可用）：PageDown、→ 或 N = 下一个词元；PageUp 或 ← = 后退；P = 播放 / 暂停；"
        ". 或 B = 遮住图表区（再按一次：显示）；? = 显示这些快捷键。",
    ),


    # --- Chain rule and Training vs generation views (ui/views/chain.py, ui/views/training.py) ---
    "tab_chain": ("Chain rule", "链式法则"),
    "tab_training": ("Training vs generation", "训练与生成"),
    "explain_chain": (
        "Each bar is the log-probability of one generated token given everything before it. Multiply the probabilities of all the tokens and you get the probability of the whole text: P(text | prompt) = P(x₁ | prompt) × P(x₂ | prompt, x₁) × …; in logs the product is a sum, the dashed line. That is why generation must go token by token: every factor is conditioned on the tokens before it, so the next token cannot be drawn before the one before it is chosen. Perplexity = exp(−mean log P): on average the model was as unsure as a fair choice among that many tokens. The diamonds below mark forks, steps where the model was much less sure than usual and the text could easily have gone elsewhere. Click any point to go back to that step.",
        "每根柱子是一个生成的词元在给定它前面所有内容时的对数概率。把所有词元的概率相乘，就得到整段文本的概率：P(文本 | 提示词) = P(x₁ | 提示词) × P(x₂ | 提示词, x₁) × …；取对数后乘积变成求和，就是那条虚线。这就是生成必须一个词元一个词元进行的原因：每个因子都以它前面的词元为条件，前一个词元还没选定，就无法抽取下一个。困惑度 = exp(−平均 log P)：平均而言，模型的不确定程度相当于在这么多个等可能的词元中做选择。下方的菱形标出分岔点：在这些步上模型比平时更没把握，文本很容易走向别处。点击任意一个点，就能回到那一步。",
    ),
    "explain_training": (
        "In training the model is shown the true text and predicts every next token at once: since every input is already known, one forward pass gives the distribution at every position (teacher forcing). The causal mask lets each position see only the tokens before it, so these are the same predictions the model made while it generated your text one step at a time. Generation cannot work this way: step t needs the token chosen at step t − 1.",
        "训练时，模型看到的是真实文本，并一次性预测每一个下一个词元：因为每个输入都已知道，一次前向计算就能得到每个位置的分布（教师强制）。因果掩码让每个位置只能看到它前面的词元，所以这些预测和模型一步一步生成你的文本时做出的预测完全相同。生成却不能这样做：第 t 步需要第 t − 1 步选出的词元。",
    ),
    "btn_compare": ("Run the whole text in one pass and compare", "用一次计算跑完整段文本并对比"),
    "compare_no_steps": ("Nothing generated yet: take at least one step, then compare.",
                         "还没有生成任何词元：请至少走一步，再进行对比。"),
    "compare_result": (
        "The one parallel pass and the {steps} cached steps give the same logits: the largest difference is {diff}, only float rounding, because under the causal mask appending a token changes no earlier row. Time: the one pass over all {tokens} tokens took {parallel} ms (median of {runs} runs after a warm-up, {low}–{high} ms); writing the generated tokens one at a time took {serial} ms ({steps} steps; the prompt's prefill is itself one parallel pass, so it is left out), {speedup}× as long.",
        "一次并行计算和 {steps} 个带缓存的步骤得到的 logits 相同：最大差值为 {diff}，只是浮点舍入误差，因为在因果掩码下，追加一个词元不会改变之前的任何一行。时间：一次计算全部 {tokens} 个词元用了 {parallel} 毫秒（预热一次后 {runs} 次运行的中位数，范围 {low}–{high} 毫秒）；逐个写出生成的词元用了 {serial} 毫秒（{steps} 步；提示词的预填充本身就是一次并行计算，所以不计入），是前者的 {speedup} 倍。",
    ),
    "compare_slower": (
        "Not shown faster this time: not every run of the one pass beat the steps (the rule: 3 runs after a warm-up, the slowest below the steps' time). The one pass computes every token of the text, the prompt's too, while each step computed only its new token and read the rest from the cache: with a long prompt and few steps the one pass does more work. And the steps were timed when they ran, this pass just now, on a shared machine. Take more steps, or press again.",
        "这一次没能显示出更快：并行计算并非每次都比逐步更快（规则：预热一次后运行 3 次，最慢的一次也要低于逐步的时间）。一次并行计算要算整段文本的每个词元，包括提示词，而每一步只计算新的那一个词元，其余的从缓存里读取：提示词长、步数少时，一次计算反而做的事更多。另外，各步是在生成时计时的，这次计算是刚刚计时的，机器又是共用的。请多生成几步，或者再按一次。",
    ),
    "compare_result_engine": (
        "One request to the engine scored all {tokens} tokens at once (vLLM's prompt_logprobs: the whole text in one parallel pass, no cached prefix reused) and agrees with the {steps} steps' own requests: the largest log-probability difference is {diff}, only float rounding, because under the causal mask appending a token changes no earlier row. Time: the one request took {parallel} ms; the {steps} steps, each its own request, took {serial} ms, {speedup}× as long (the prompt's request is left out: it is itself one parallel pass).",
        "向推理引擎发出的一次请求就给全部 {tokens} 个词元打了分（vLLM 的 prompt_logprobs：整段文本一次并行计算，不复用缓存的前缀），结果与 {steps} 步各自的请求一致：对数概率的最大差值为 {diff}，只是浮点舍入误差，因为在因果掩码下，追加一个词元不会改变之前的任何一行。时间：这一次请求用了 {parallel} 毫秒；{steps} 步每步各发一次请求，共用了 {serial} 毫秒，是前者的 {speedup} 倍（提示词的那次请求本身就是一次并行计算，所以不计入）。",
    ),
    "compare_engine_slower": (
        "Here the one request was not faster: it computed every token of the text, while each step's request computed only its new token and read the rest from the engine's cache. With a long prompt and few steps the one pass does more work; after more steps their total overtakes it (timings on a shared machine vary too).",
        "这一次，单次请求并不更快：它要计算整段文本的每一个词元，而每一步的请求只计算新的那一个词元，其余的从引擎的缓存里读取。提示词长、步数少时，一次并行计算反而做的事更多；多生成一些步，逐步请求的总时间就会超过它（在共享的机器上，计时也会有波动）。",
    ),
    "score_heading": ("Score any text", "给任意文本打分"),
    "explain_score": (
        "Paste any text: one pass gives each of its tokens' rank and probability under the model (no chat template). The colours are GLTR's buckets (Gehrmann et al. 2019): top 10, top 100, top 1,000, beyond. Text a model like this one wrote tends to stay pale, mostly its top-10 tokens; human writing has more dark, surprising tokens. A hint, not a proof.",
        "粘贴任意文本：一次计算就能得到其中每个词元在模型下的排名和概率（不套用对话模板）。颜色分组与 GLTR（Gehrmann 等，2019）相同：前 10、前 100、前 1,000、之后。像这样的模型写出的文本往往颜色很浅，大多是它的前 10 名词元；人写的文字里深色的、出乎意料的词元更多。这只是线索，不是证据。",
    ),
    "score_label": ("Text to score", "要评分的文本"),
    "btn_score": ("Score this text", "给这段文本打分"),

    # --- Save / load: the session as one web page (ui/views/session_io.py, viz/offline.py) ---
    "btn_export_page": ("Export as a web page", "导出为网页"),
    "page_file": ("Web page (HTML: opens in any browser, offline)", "网页（HTML：任何浏览器都能离线打开）"),
    # --- Lesson view (ui/views/lesson.py; a lesson file's refusals: model/errors.py) ---
    "tab_lesson": ("Lesson", "课程"),
    "lesson_pick": ("Lesson", "选择课程"),
    "lesson_upload": ("Load your own lesson (JSON)", "载入自己的课程（JSON）"),
    "lesson_start": ("Start this lesson", "开始这节课"),
    "lesson_prev": ("◀ Previous step", "◀ 上一步"),
    "lesson_next": ("Next step ▶", "下一步 ▶"),
    "lesson_resume": ("Resume where you left off", "从上次停下的地方继续"),
    "lesson_saved": ("You left **{title}** at step {step} of {total}.", "你上次学到《{title}》的第 {step} 步（共 {total} 步）。"),
    "lesson_intro": ("Pick a lesson and press Start. Each step loads a prompt and its settings into the page (the lesson's settings apply: the sliders show them), opens a tab and says what to look at. Some steps ask you to guess first; the answer appears only after you commit.",
                     "选择一节课，然后点“开始这节课”。每一步都会把提示词和设置载入页面（使用课程自己的设置，滑块会显示出来），打开一个标签页，并告诉你该看什么。有些步骤会先请你猜一猜；你提交之后才会显示答案。"),
    "lesson_step_of": ("Step {step} of {total}", "第 {step} 步，共 {total} 步"),
    "lesson_open_tab": ("Open the {tab} tab ▶", "打开“{tab}”标签页 ▶"),
    "lesson_guess": ("Your guess", "你的猜测"),
    "lesson_commit": ("Commit my guess", "提交我的猜测"),
    "lesson_guess_first": ("Choose or type a guess first, then commit it.", "请先选择或输入一个猜测，再提交。"),
    "lesson_no_lesson": ("No lesson is open: pick one and press Start.", "还没有打开课程：请先选择一节课并点“开始这节课”。"),
    "lesson_no_predict": ("This step asks for no guess.", "这一步不需要猜测。"),
    "lesson_yes": ("Kept", "保留"),
    "lesson_no": ("Removed", "被删掉"),
    "lesson_order_transformers": ("Temperature first (Hugging Face) keeps more", "先温度（Hugging Face）保留得更多"),
    "lesson_order_temperature_last": ("Temperature last (llama.cpp) keeps more", "温度最后（llama.cpp）保留得更多"),
    "lesson_order_same": ("Both keep the same number", "两种顺序保留的一样多"),
    "lesson_score": ("**Your score: {right} of {total}** (a question counts when you commit a guess).",
                     "**你的得分：{total} 题中答对 {right} 题**（提交了猜测的题目才计分）。"),
    "lesson_score_step": ("Step {step}: {result}", "第 {step} 步：{result}"),
    "lesson_score_right": ("✔ right", "✔ 答对"),
    "lesson_score_wrong": ("✘ wrong", "✘ 答错"),
    "lesson_score_none": ("not answered", "未作答"),
    "lesson_class_results": ("**Your class**, question by question (counts, no names):",
                             "**全班**逐题的结果（只计人数，不记名字）："),
    "lesson_class_step": ("Step {step}: {right} right, {wrong} wrong, {none} no answer",
                          "第 {step} 步：{right} 人答对，{wrong} 人答错，{none} 人未作答"),
    "lesson_class_not_revealed": ("Step {step}: not revealed to the class yet", "第 {step} 步：还没有向全班揭晓"),
    "lesson_right": ("✔ Right.", "✔ 猜对了。"),
    "lesson_wrong": ("✘ Not this time.", "✘ 这次没猜中。"),
    "lesson_reveal_token": ("The model gave your guess {guess} a probability of **{prob}** (rank {rank} of {vocab:,}). Its most likely next token was {top} at {top_prob}; with this step's settings it wrote {chosen}.",
                            "模型给你的猜测 {guess} 的概率是 **{prob}**（在 {vocab:,} 个词元中排第 {rank}）。它认为最可能的下一个词元是 {top}，概率 {top_prob}；在这一步的设置下，它写出的是 {chosen}。"),
    "lesson_first_token": ("Your guess is several tokens; the model is asked about its first one, {token}.",
                           "你的猜测包含好几个词元；这里问的是它的第一个词元 {token}。"),
    "lesson_reveal_top_p": ("{token} has probability {prob} (rank {rank}). The tokens ranked above it add up to {before}; top-p = {p} keeps the smallest set whose total reaches p, so {token} is **{fate}**.",
                            "{token} 的概率是 {prob}（排第 {rank}）。排在它前面的词元加起来是 {before}；top-p = {p} 保留累积概率达到 p 的最小集合，所以 {token} **{fate}**。"),
    "lesson_reveal_cache": ("2 (K and V) × {layers} layers × {kv_heads} KV heads × {head_dim} × {tokens:,} tokens × {bytes_per} bytes = **{bytes:,} B = {size}**.",
                            "2（K 和 V）× {layers} 层 × {kv_heads} 个 KV 头 × {head_dim} × {tokens:,} 个词元 × {bytes_per} 字节 = **{bytes:,} B = {size}**。"),
    "lesson_reveal_order": ("With these settings, temperature first keeps **{first}** token(s); temperature last keeps **{last}**.",
                            "在这些设置下，先做温度保留 **{first}** 个词元；温度放在最后保留 **{last}** 个。"),
    "lesson_reveal_order_what": (
        "The logits and the settings (T = {temperature}, {cuts}) are the same in both runs; only the order differs, "
        "because the cuts read the probabilities after temperature in one order and before it in the other. What "
        "changes: the two kept sets differ by **{diff}** token(s).",
        "两次用的是同一组 logits、同一组设置（T = {temperature}，{cuts}），只有顺序不同：一种顺序里截断看到的是温度调整之后的概率，"
        "另一种看到的是调整之前的。变化在于：两种顺序留下的词元数相差 **{diff}** 个。"),
    "lesson_step_same": ("About the same time here: the step looks O(1)", "在这里用时差不多：看起来是 O(1)"),
    "lesson_step_grows": ("Measurably slower on the long text: the step grows with t",
                          "长文本上明显更慢：一步的用时随 t 增长"),
    "lesson_beam_higher": ("Beam search's text has the higher log P", "束搜索的文本 log P 更高"),
    "lesson_sampled_higher": ("The sampled text has the higher log P", "采样得到的文本 log P 更高"),
    "lesson_beam_same": ("Both are the same text", "两段文本完全一样"),
    "lesson_reveal_step_time": (
        "Measured just now on this machine, on the step's text repeated to {tokens:,} tokens (a cached step's cost "
        "depends on how many positions it reads, not on which tokens they are), at least {runs} run(s) per length: "
        "a cached step took **{short_ms} ms** at {short} tokens and **{long_ms} ms** at {long:,}. The line fitted to "
        "the medians rises by **{slope} ms per 1,000 tokens**: {fit_short} ms → {fit_long} ms. The rule: it grows if "
        "the fitted time at the longest length is at least {growth} above the shortest and every run there was "
        "slower than every run at the shortest; it is the same if the line rises by less than {growth}.",
        "刚刚在这台机器上测的：把这一步的文本重复到 {tokens:,} 个词元（有缓存时一步的开销取决于要读多少个位置，而不是这些位置上是什么词元），"
        "每个长度至少跑 {runs} 次。在 {short} 个词元时一步用了 **{short_ms} 毫秒**，在 {long:,} 个词元时用了 **{long_ms} 毫秒**。"
        "对中位数拟合的直线**每千个词元上升 {slope} 毫秒**：{fit_short} 毫秒 → {fit_long} 毫秒。判定规则：如果最长长度处的拟合时间比最短处高出至少 "
        "{growth}，并且最长处的每一次都比最短处的每一次慢，就算“变慢”；如果直线上升不到 {growth}，就算“一样”。"),
    "lesson_reveal_step_grows": (
        "**It grows.** The projections and the MLP cost the same at every step, but attention reads all t cached "
        "keys and values: a step is O(t), and the whole text O(t²).",
        "**它会变慢。** 投影和 MLP 每一步的开销确实不变，但注意力要读完全部 t 个缓存的键和值：一步是 O(t)，整段文本是 O(t²)。"),
    "lesson_reveal_step_same": (
        "**Flat within {growth} here**, so the claim looks true on this model at these lengths, but it is not: "
        "the projections, the MLP and the output layer over the whole vocabulary cost the same at every step and "
        "outweigh attention's reads of the t cached positions. Those reads still grow with t (O(t) a step), and on "
        "a long text or a larger model they dominate.",
        "**在这里，变化不到 {growth}**，所以在这个模型、这些长度上，这个说法看起来成立，其实不然：投影、MLP 和覆盖整个词表的"
        "输出层每一步的开销都一样，盖过了注意力读取 t 个缓存位置的开销。这部分读取仍随 t 增长（每步 O(t)），"
        "文本更长或模型更大时，它就会占主导。"),
    "room_feedback_no_verdict": ("The machine was too busy to measure it cleanly this time: graded on how a cached step "
                                 "works (its attention reads every cached key and value, so it grows).",
                                 "这台机器这次太忙，没能干净地测出来：按缓存下一步的工作原理评分（它的注意力要读取每一个缓存的键和值，所以会变慢）。"),
    "lesson_reveal_step_noisy": (
        "**The machine was too busy to measure this cleanly just now** ({why}), so these times are no verdict: a "
        "busy neighbour slows a run by far more than the long text's extra reads. Open the KV cache tab and measure "
        "again when it is quieter.",
        "**这台机器刚才太忙，没能干净地测出来**（{why}），所以这些时间不能作为结论：别的任务拖慢一次运行的幅度，远远超过长文本多读的那些键和值。"
        "等机器空闲些，打开“KV 缓存”标签页再测一次。"),
    "lesson_step_busy_runs": ("only {runs} run(s) at {long} tokens fitted in the time allowed; 3 are needed",
                              "{long} 个词元时，规定时间内只跑了 {runs} 次；需要 3 次"),
    "lesson_step_busy_overlap": (
        "the runs overlapped: {short_low}–{short_high} ms at {short} tokens against {long_low}–{long_high} ms at {long}",
        "几次测量互相重叠：{short} 个词元时 {short_low}–{short_high} 毫秒，{long} 个词元时 {long_low}–{long_high} 毫秒"),
    "lesson_reveal_step_known": (
        "A guess is graded on how a cached step works: **it grows**, because its attention reads every cached key "
        "and value (O(t) a step), however small that is next to the projections and the MLP.",
        "猜测按缓存下一步的工作原理评分：**它会变慢**，因为它的注意力要读取每一个缓存的键和值（每步 O(t)），"
        "哪怕这部分比投影和 MLP 小得多。"),
    "lesson_reveal_kept_count": (
        "Top-p = {p} kept **{kept:,}** of {vocab:,} tokens, not p × vocabulary = {myth:,}. It keeps the smallest "
        "set of the most likely tokens whose probability adds up to p, however many that is: {tokens}.",
        "top-p = {p} 保留了 {vocab:,} 个词元中的 **{kept:,}** 个，而不是 p × 词表大小 = {myth:,}。它保留的是概率加起来达到 p "
        "的最小的一组最可能的词元，有几个算几个：{tokens}。"),
    "lesson_reveal_more": (" and {n:,} more", "，另外还有 {n:,} 个"),
    "lesson_reveal_beam_text": (
        "Beam search (B = {width}) wrote {text}: log P = **{logp}**, {repeated} of its {n} tokens repeat an earlier "
        "stretch ({ngrams} repeated stretch(es)).",
        "束搜索（B = {width}）写出 {text}：log P = **{logp}**，{n} 个词元里有 {repeated} 个在重复前文（{ngrams} 段重复）。"),
    "lesson_reveal_sampled_text": (
        "Sampling with this step's settings wrote {text}: log P = **{logp}**, {repeated} of its {n} tokens repeat "
        "({ngrams} repeated stretch(es)).",
        "用这一步的设置采样写出 {text}：log P = **{logp}**，{n} 个词元里有 {repeated} 个在重复（{ngrams} 段重复）。"),
    "lesson_reveal_beam_higher": (
        "Beam search's text is the likelier one: that is what it searches for, not the best text.",
        "束搜索的文本更可能：它找的正是这个，而不是最好的文本。"),
    "lesson_reveal_sampled_higher": (
        "Here the sampled text is the likelier one: beam search keeps only a few partial texts, so it is not an "
        "exact search.",
        "这一次采样的文本反而更可能：束搜索每步只保留几条候选，并不是精确搜索。"),
    "lesson_reveal_texts_same": ("Both wrote the same text.", "两种方法写出了同一段文本。"),
    "lesson_reveal_repeats_beam": ("Beam search's text repeats more.", "束搜索的文本重复得更多。"),
    "lesson_reveal_repeats_sampled": ("The sampled text repeats more.", "采样的文本重复得更多。"),
    "lesson_reveal_repeats_same": ("They repeat equally.", "两者重复得一样多。"),
    "lesson_no_file": ("Could not load that lesson: upload a lesson file (JSON) from your computer.",
                       "无法载入这节课：请从你的电脑上传一个课程文件（JSON）。"),

    # --- Speculative decoding, The class batched, Paged KV blocks views (ui/views/speculative.py, batching.py, paged.py) ---
    "tab_speculative": ("Speculative decoding", "推测解码"),
    "tab_batching": ("The class, batched", "全班一起批处理"),
    "tab_paged": ("Paged KV blocks", "分页 KV 块"),
    "explain_speculative": (
        "Speculative decoding continues your text several tokens per forward pass. Each round a cheap draft guesses up to k tokens (here prompt lookup: it finds the first place, reading from the start of the text, where its last words appeared before, and copies what followed them there). The model then checks all of them in **one** pass: a draft is kept when the random number u is below the model's probability p of it, so under temperature 0 exactly when it is the model's own top token. At the first rejection the model puts in a token of its own; if every draft was kept it adds one bonus token. Under temperature 0 the result is exactly the text the model writes one token at a time, only in fewer passes; when sampling, it follows exactly the same probabilities.",
        "推测解码让模型每次前向计算续写好几个词元。每一轮，一个廉价的草稿先猜出最多 k 个词元（这里用的是提示词查找：从文本开头往后找，找到最后几个词在前文中第一次出现的位置，把那里紧跟其后的内容照抄过来）。然后模型用**一次**计算检查全部草稿：随机数 u 小于模型给该草稿的概率 p 时草稿被保留，所以温度为 0 时，恰好是它正是模型自己的第一名词元时才保留。遇到第一个被拒的草稿，模型换上自己的词元；如果全部保留，它再多加一个额外词元。温度为 0 时，结果和模型一个词元一个词元写出来的文本完全一样，只是计算次数更少；采样时，它遵循的概率也完全相同。",
    ),
    "spec_draft_len": ("Draft length k (tokens guessed per round)", "草稿长度 k（每轮猜的词元数）"),
    "spec_new_tokens": ("Tokens to write", "要写的词元数"),
    "btn_spec_run": ("Continue by speculative decoding", "用推测解码续写"),
    "btn_spec_keep": ("Keep this continuation", "保留这段续写"),
    "btn_spec_discard": ("Throw it away", "丢弃"),
    "btn_spec_measure": ("Measure: does it pay on this machine?", "测量：在这台机器上划算吗？"),
    "spec_run_summary": (
        "**{tokens} tokens in {passes} forward passes** (one token at a time would need {tokens}): {saved} passes saved. {accepted} of {drafted} drafted tokens were kept ({rate}). Not yet part of your text: keep it or throw it away.\n\nContinuation: `{text}`",
        "**{passes} 次前向计算写出 {tokens} 个词元**（一个一个写需要 {tokens} 次）：省下 {saved} 次。起草的 {drafted} 个词元中保留了 {accepted} 个（{rate}）。还不是你文本的一部分：可以保留，也可以丢弃。\n\n续写：`{text}`",
    ),
    "spec_engine_summary": (
        "**The engine wrote {tokens} tokens; {passes}{steps} of its passes verified drafts** ({tpp} tokens per verifying pass; {accepted} of {drafted} drafts accepted, {rate}; its drafts per step k = {k}, set by the operator) in {ms} ms. The engine's run is not kept in your text.\n\nContinuation: `{text}`",
        "**推理引擎写出了 {tokens} 个词元；{passes}其中 {steps} 次验证计算检查了草稿**（每次验证 {tpp} 个；起草的 {drafted} 个中接受了 {accepted} 个，{rate}；每步草稿数 k = {k}，由运维人员设定），用时 {ms} 毫秒。引擎的这次续写不会留在你的文本里。\n\n续写：`{text}`",
    ),
    "spec_engine_off": (
        "The engine answered, but it was not started with speculative decoding, so it has no draft counts to show: the operator starts vLLM with `--speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 3, \"prompt_lookup_min\": 1}}' --per-request-spec-decode-metrics detailed` (docs/operators.md).",
        "推理引擎有回应，但它启动时没有开启推测解码，所以没有草稿计数可看：运维人员需要用 `--speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 3, \"prompt_lookup_min\": 1}}' --per-request-spec-decode-metrics detailed` 启动 vLLM（见 docs/operators.md）。",
    ),
    "spec_engine_why": (
        "Both decode greedily, so they must write the same text as plain greedy decoding, whatever their drafts; their drafts and passes may differ, because the engine's n-gram window and its drafts per step (k) are the operator's flags, not the slider, and vLLM copies after the longest matching n-gram where this app copies after the first match.",
        "两者都是贪心解码，所以不管草稿怎样，写出的文本都必须和普通贪心解码一样；它们的草稿和计算次数可以不同，因为引擎的 n-gram 窗口和每步草稿数（k）由运维人员的启动参数决定，而不是由滑块决定，而且 vLLM 照抄最长匹配 n-gram 之后的内容，本应用照抄第一个匹配之后的内容。",
    ),
    "spec_engine_local": (
        "Beside it, this app's own prompt lookup on {model} (the same model, here, k = {k} from the slider): {tokens} tokens in {passes} passes ({tpp} per pass). The two texts agree on {agree} of {compared} tokens.",
        "旁边是本应用自己在 {model}（同一个模型，在本机上运行，k = {k} 取自滑块）上的提示词查找：{passes} 次计算写出 {tokens} 个词元（每次 {tpp} 个）。两段文本在 {compared} 个词元中有 {agree} 个一致。",
    ),
    "spec_engine_passes": ("it took {passes} passes in all (a pass without a draft writes one token); ",
                           "它一共做了 {passes} 次计算（没有草稿的那一次只写一个词元），"),
    "spec_engine_no_local": (
        "Only the engine's run is shown: the same model is not loaded here to run this app's own rounds beside it.",
        "这里只显示引擎的结果：本机没有加载同一个模型，无法在旁边运行本应用自己的推测解码。",
    ),
    "spec_engine_no_keep": ("The engine's continuation is not kept: step on with Next token to write on the engine.",
                            "引擎的续写不会保留：请用“下一个词元”在引擎上继续写。"),
    "spec_nothing_to_keep": ("Nothing to keep: continue by speculative decoding first.",
                             "没有可保留的内容：请先用推测解码续写。"),
    "spec_text_changed": ("Your text changed since this continuation was made: run it again, then keep it.",
                          "生成这段续写之后你的文本已改变：请重新运行，再保留。"),
    "spec_kept": ("Kept: {n} tokens are now steps of your text, as if taken one at a time.",
                  "已保留：这 {n} 个词元现在是你文本中的步骤，就像一个一个写出来的一样。"),
    "spec_discarded": ("Thrown away: your text is as it was.", "已丢弃：你的文本没有改变。"),
    "spec_speed_repeating": ("On a text that repeats itself (code)", "在重复自身的文本（代码）上"),
    "spec_speed_prose": ("On free prose", "在自由的散文上"),
    "spec_speed_pays": (
        "{text}, speculative decoding took **{spec} ms per token** against {plain} ms one token at a time: **{speedup}× faster** ({rate} of drafts kept, {tpp} tokens per pass, {tokens} tokens).",
        "{text}，推测解码**每个词元 {spec} 毫秒**，一个一个写是 {plain} 毫秒：**快 {speedup} 倍**（草稿保留率 {rate}，每次计算 {tpp} 个词元，共 {tokens} 个词元）。",
    ),
    "spec_speed_not": (
        "{text}, speculative decoding took **{spec} ms per token** against {plain} ms one token at a time: **no gain** ({speedup}×; {rate} of drafts kept, {tpp} tokens per pass, {tokens} tokens).",
        "{text}，推测解码**每个词元 {spec} 毫秒**，一个一个写是 {plain} 毫秒：**没有加速**（{speedup} 倍；草稿保留率 {rate}，每次计算 {tpp} 个词元，共 {tokens} 个词元）。",
    ),
    "spec_speed_why": (
        "It pays when the drafts are right, because checking k tokens in one pass costs little more than one step; when they are wrong, each pass still does the extra work and writes one token.",
        "草稿猜对时就划算，因为一次计算检查 k 个词元只比走一步贵一点；猜错时，每次计算照样多做了工作，却只写出一个词元。",
    ),
    "explain_paged": (
        "A **model** of vLLM's paged KV-cache allocator, computed from this server's real sessions (their lengths, and their prompts' token ids to find shared blocks). vLLM keeps each sequence's keys and values in blocks of 16 tokens listed in a block table, so a sequence takes memory as it grows and wastes less than one block; a contiguous allocator reserves the longest possible text for every sequence up front. Sequences that start with the same full blocks (the same prompt) share them. Your session is marked; the others are anonymous: only their lengths are used.",
        "这是 vLLM 分页 KV 缓存分配器的一个**模型**，根据本服务器上真实的会话计算（它们的长度，以及用提示词的词元 id 找出可共享的块）。vLLM 把每个序列的键和值存放在每块 16 个词元的块里，并用块表记录，所以序列随增长才占用内存，浪费不到一个块；连续分配则要预先为每个序列预留最长可能的文本。开头有相同完整块（相同提示词）的序列可以共享这些块。你的会话已标出；其他会话都是匿名的：只用到它们的长度。",
    ),
    "btn_paged_refresh": ("Show the sessions now", "显示当前的会话"),
    "paged_summary": (
        "{sessions} live sessions in {blocks}: **{paged}** paged (of which {waste} empty slots in last blocks, and {shared} saved by shared prefixes), against **{reserved}** if every session reserved {max} tokens.",
        "{sessions} 个活跃会话，共 {blocks}：分页占用 **{paged}**（其中最后一块的空位 {waste}，共享前缀省下 {shared}），而如果每个会话都预留 {max} 个词元，需要 **{reserved}**。",
    ),
    "explain_batching": (
        "Every Next token of everyone in the class goes to one queue; the server runs the steps that arrive together as **one** forward pass. Below: the server's real passes of the last minutes, how many sessions each carried and how long it took. Only counts and times are shown, never anyone's text.",
        "全班每个人点的“下一个词元”都进入同一个队列；服务器把同时到达的步骤合成**一次**前向计算来运行。下图是服务器最近几分钟真实的计算：每次带了几个会话、用了多长时间。这里只显示数量和时间，从不显示任何人的文本。",
    ),
    "btn_batch_refresh": ("Show the server's passes now", "显示服务器当前的计算"),
    "explain_batch_measure": (
        "Measure it: one decode pass at batch 1, 2, 4, 8 and 16 on the loaded model (the server's own batched pass), and one prefill of a long prompt. A decode pass reads every weight once however many sessions it carries, so it is bound by memory; a prefill does many tokens' arithmetic per weight read, so it is bound by compute. The class's steps go on between the measured passes.",
        "测一测：在已加载的模型上，分别以批大小 1、2、4、8、16 运行一次解码计算（就是服务器自己的批处理计算），再对一个长提示词做一次预填充。无论带多少个会话，一次解码都要把所有权重读一遍，所以它受内存限制；预填充每读一次权重要为很多词元做运算，所以它受算力限制。测量的各次计算之间，全班的步骤照常进行。",
    ),
    "btn_batch_measure": ("Measure batch 1 to 16 now", "现在测量批大小 1 到 16"),
    "batch_measure_local": (
        "This measures the app's own local model, {model}: the engine runs its passes in its own process, where the app cannot time them one by one (its batches are in the chart above).",
        "这里测量的是本应用自己的本地模型 {model}：引擎在它自己的进程里做计算，本应用无法逐次计时（引擎的批次见上方图表）。",
    ),

    # --- Medusa heads view (ui/views/medusa.py; the heads: model/speed/medusa_heads.py) ---
    "tab_medusa": ("Medusa heads", "Medusa 多头"),
    "explain_medusa": (
        "**Medusa** guesses several tokens ahead without a second model. Small extra **heads** read the model's last hidden state at position t: the model's own head gives t + 1, head k guesses t + k + 1. The heads here were trained on this machine by self-distillation: on text the model wrote itself, each learned to guess the model's own greedy token further ahead (the model itself was not changed; docs/what-it-teaches.md says how, with each head's accuracy). Each head's first few guesses make a **tree** of candidate continuations, and **one** forward pass checks the whole tree. The lesson is its **tree attention mask**: each candidate attends to the text and to its own ancestors in the tree, never to a sibling, so each row computes exactly what a pass over its own path would. Walking from the root, a guess is accepted when it is the model's own most likely token after its parent; the pass writes the accepted guesses and one token of the model's own. So the text is exactly greedy decoding's, in fewer passes (it runs greedily whatever the settings; Medusa's *typical acceptance*, which keeps merely plausible guesses and so changes the text, is not offered). On this CPU a pass over a bigger tree costs more time, so fewer passes is not always less time; on a GPU such a pass costs about as much as one token's.",
        "**Medusa** 不用第二个模型就能往后猜好几个词元。几个小的额外**头**读取模型在位置 t 的最后一层隐藏状态：模型自己的输出头给出 t + 1，第 k 个头猜 t + k + 1。这里的头是在这台机器上用自蒸馏训练的：在模型自己写出的文本上，每个头学会猜模型自己更靠后的贪心词元（模型本身没有改动；训练方法和每个头的准确率见 docs/what-it-teaches.md）。每个头的前几个猜测组成一棵候选续写的**树**，**一次**前向计算就检查整棵树。这里的要点是它的**树形注意力掩码**：每个候选只关注文本和它在树中的祖先，从不关注兄弟节点，所以每一行算出的结果，和只沿它自己那条路径计算完全一样。从根出发，某个猜测正是模型在其父节点之后最可能的词元时就被接受；这次计算写下被接受的猜测，再加一个模型自己的词元。所以文本和贪心解码完全一样，只是计算次数更少（无论设置如何，这里都用贪心；Medusa 的*典型接受*会保留只是看起来合理的猜测，从而改变文本，这里不提供）。在这台 CPU 上，树越大，一次计算越费时，所以次数少不一定时间短；在 GPU 上，这样一次计算的耗时和只算一个词元差不多。",
    ),
    "medusa_new_tokens": ("Tokens to write", "要写的词元数"),
    "medusa_tree": ("Candidates in the tree (checked in one pass)", "树中的候选数（一次计算全部检查）"),
    "btn_medusa_run": ("Continue with Medusa (greedy)", "用 Medusa 续写（贪心）"),
    "medusa_pass": ("Pass to show", "显示第几次计算"),
    "medusa_summary": (
        "**Medusa wrote {tokens} tokens in {passes} verifying passes: {tpp} tokens per pass** ({accepted} of the heads' guesses accepted), {ms} ms per token. On the same text, prompt lookup (k = {k}) took {lookup_passes} passes, {lookup} tokens per pass, {lookup_ms} ms per token; one token at a time, {plain_ms} ms per token. {same} Not kept in your text.\n\nContinuation: `{text}`",
        "**Medusa 用 {passes} 次验证计算写了 {tokens} 个词元：每次 {tpp} 个**（接受了 {accepted} 个头的猜测），每个词元 {ms} 毫秒。在同一文本上，提示词查找（k = {k}）用了 {lookup_passes} 次计算，每次 {lookup} 个词元，每个词元 {lookup_ms} 毫秒；一次一个词元时，每个词元 {plain_ms} 毫秒。{same}不会留在你的文本里。\n\n续写：`{text}`",
    ),
    "medusa_same": ("All three wrote exactly the same tokens, as greedy verification must.",
                    "三种方式写下的词元完全相同，贪心验证理应如此。"),
    "medusa_differs": ("The three did **not** write the same tokens: two tokens were almost tied somewhere, and float rounding in a pass over many tokens broke the tie differently.",
                       "三种方式写下的词元**不**相同：某处有两个词元几乎并列，在多词元的一次计算中，浮点舍入让它们分出了不同的胜负。"),
    "medusa_heads_said": (
        "The {heads} heads were trained here in {minutes} minutes on {positions} positions of {texts} texts the model wrote itself. On held-out text their first guess is the model's own token {top1} of the time (head 1, 2, ...), one of their first five {top5}.",
        "这 {heads} 个头是在本机用 {minutes} 分钟训练的，数据是模型自己写的 {texts} 段文本中的 {positions} 个位置。在留出文本上，它们的第一个猜测正好是模型自己的词元的比例为 {top1}（头 1、2……），前五个猜测之一为 {top5}。",
    ),
    "medusa_nothing": ("Nothing to show yet: continue with Medusa first.", "还没有可显示的内容：请先用 Medusa 续写。"),
    "medusa_pass_range": ("There is no pass {value}: this run has {passes}.", "没有第 {value} 次计算：这次运行共有 {passes} 次。"),

    # --- Branches view (ui/views/branches.py) ---
    "tab_branches": ("Branches", "分支"),
    "explain_branches": (
        "Go back (Back, a click on a token) and take a different step, for example force an unlikely token: the old text is not lost, it is kept as a **branch**. The tree shows every text of this prompt, from where it split off. Pick one and press **Continue this branch** to make it the text again, exactly as it was. Compare two to see, token by token, what the model did after the split: after a token it would not have chosen, does it recover, or keep writing from its own mistake?",
        "后退（“后退”按钮，或点击某个词元）之后换一种方式生成，比如强制选一个不太可能的词元：原来的文本不会丢失，而是保留为一个**分支**。分支树显示这个提示生成过的每一段文本，从它分出的位置开始。选一个分支并点击**继续这个分支**，它就原样恢复为当前文本。比较两个分支，可以逐个词元看到分叉之后模型做了什么：遇到一个它自己不会选的词元之后，它是能回到正轨，还是顺着自己的错误继续写下去？",
    ),
    "branch_pick": ("Branch", "分支"),
    "btn_switch_branch": ("Continue this branch", "继续这个分支"),
    "btn_delete_branch": ("Delete this branch", "删除这个分支"),
    "compare_a": ("Compare A (empty: the text shown now)", "比较 A（留空：当前显示的文本）"),
    "compare_b": ("with B (empty: the one it split from)", "与 B（留空：它分出来的那个分支）"),
    "btn_branch_compare": ("Compare", "比较"),
    "branch_pick_first": ("Pick a branch in the list first.", "请先在列表中选一个分支。"),
    "compare_need_two": ("There is only one text so far: go back, step differently, then compare.",
                         "目前只有一段文本：先后退，换一种方式生成，再来比较。"),


    # --- Room: a class follows the teacher (ui/views/room.py; the registry's refusals: model/errors.py) ---
    "tab_room": ("Room", "课堂"),
    "explain_room": (
        "**Teacher:** press *Open a room* and give the class its code (or the link). Your students then see your text, step and chart as you go; only you drive. The room closes when you close this page or press *Close the room*.  \n**Student:** type the teacher's code and press *Join*. You follow the teacher's page here, read-only. *Explore from here* copies the teacher's text into your own session so you can try other tokens and settings; *Back to the teacher* follows again.",
        "**老师**：按“开设课堂”，把课堂码（或链接）告诉全班。学生就能随着你的操作看到你的文本、步数和图表；只有你能操作。关闭本页面或按“关闭课堂”时，课堂即关闭。  \n**学生**：输入老师的课堂码并按“加入”。你会在这里只读地跟随老师的页面。“从这里自己探索”会把老师的文本复制到你自己的会话里，你可以尝试别的词元和设置；“回到老师”则重新跟随。",
    ),
    "btn_room_open": ("Open a room", "开设课堂"),
    "btn_room_close": ("Close the room", "关闭课堂"),
    "room_code": ("Room code", "课堂码"),
    "btn_room_join": ("Join", "加入"),
    "btn_room_explore": ("Explore from here", "从这里自己探索"),
    "btn_room_back": ("Back to the teacher", "回到老师"),
    "room_opened": ("Your room is open. Students type this code in their Room tab, or open the link:",
                    "课堂已开设。学生在“课堂”标签页输入这个课堂码，或打开链接："),
    "room_closed_teacher": ("The room is closed: your students no longer follow you.", "课堂已关闭：学生不再跟随你。"),
    "room_waiting": ("Joined room {code}: waiting for the teacher's page…", "已加入课堂 {code}：正在等待老师的页面……"),
    "room_following": ("Following room {code} · the teacher is at step {step}, on the {tab} tab · read-only",
                       "正在跟随课堂 {code} · 老师在第 {step} 步，“{tab}”标签页 · 只读"),
    "room_exploring": (
        "You are exploring on your own from the teacher's step {step}: the text above is your own session now. Press Back to the teacher to follow again.",
        "你正在从老师的第 {step} 步开始自己探索：上方的文本现在是你自己的会话。按“回到老师”即可重新跟随。",
    ),
    "room_nothing_yet": ("The teacher has not shown a text yet: wait for the first step.",
                         "老师还没有展示文本：请等待第一步。"),
    # the teacher's lesson asks the room (ui/views/room.py on the students' side, ui/views/lesson.py on the teacher's)
    "room_guess_pick": ("The teacher asks: your guess", "老师提问：你的猜测"),
    "btn_room_guess": ("Send my guess", "提交我的猜测"),
    "room_guess_sent": ("Your guess is in. The teacher sees how many chose each answer, not who. You can still change it.",
                        "你的猜测已提交。老师只看到每个选项有多少人选，看不到是谁。揭晓前仍可修改。"),
    "btn_class_guesses": ("Show the class's guesses", "显示全班的猜测"),
    # ---- logit lens view (ui/views/lens.py) ----
    "tab_lens": ("Logit lens", "逻辑透镜"),
    "explain_lens": (
        "The model is a stack of layers, each adding to one running vector per token (the residual stream). The logit lens reads that vector after every layer as if it were the last: through the model's final norm and its LM head, into a probability for every token. Each row below is one layer, each column one position; the colour is the probability that layer's reading gives the token that came next, the text its own top token. The top row is the model's real output.",
        "模型是一叠层，每一层都往每个词元的同一个向量（残差流）上添加内容。逻辑透镜把每一层之后的这个向量都当作最后一层来读：经过模型最后的归一化和语言模型头，得到每个词元的概率。下图每一行是一层，每一列是一个位置；颜色是该层的读数给“下一个真正出现的词元”的概率，文字是该读数自己的最高词元。最上面一行就是模型真正的输出。"),
    "explain_lens_limits": (
        "What it does not show: the layers before the last were never trained to be read this way. A lens shows at which depth the final answer becomes readable through the last layer's unembedding, not what a layer 'thinks' or 'knows'; an early layer can hold the answer in a form this reading cannot see (a tuned lens, trained per layer, reads them better). The first row (emb) is the token embedding read back, which mostly predicts the input token itself.",
        "它没有显示什么：最后一层之前的各层从来没有被训练成可以这样读。透镜显示的是：最终答案在多深的层上能通过最后一层的反嵌入被读出来，而不是某一层“在想什么”或“知道什么”；前面的层可能以这种读法看不到的形式包含答案（为每一层单独训练的“调校透镜”能读得更好）。第一行（嵌入）是把词嵌入直接读回来，它大多预测的是输入词元本身。"),
    "explain_lens_commit": (
        "**Where each token was decided.** Under the heat map, on its columns: for each token that came next, the first layer from which it stays the lens's top token all the way up. For a generated token, green means the step's own random number u (its settings and seed) would have drawn it already from that layer's reading, orange that the same u would have drawn another token there. A × marks a token the last layer did not rank first: it was sampled, so it never becomes the top token.",
        "**每个词元在哪里被决定。** 在热图下方、与它同列：对每个接下来的词元，从哪一层起它一直是透镜的首选词元，直到最后一层。对生成的词元，绿色表示该步自己的随机数 u（它的设置和种子）在那一层的读数上就已经会抽到它，橙色表示同一个 u 在那里会抽到别的词元。× 标出最后一层没有把它排在第一的词元：它是抽样得到的，所以从未成为首选。"),
    "lens_commit_label": ("Where each token was decided", "每个词元在哪里被决定"),
    "explain_lens_pins": (
        "**Pin tokens.** Type one or more tokens, separated by commas, and pick a position the lens read: the chart shows each layer's probability of each of them there, with the token that came next (dashed) for comparison. Each must be exactly one token of the vocabulary, as typed: a leading space counts (' Paris' is one token, 'Paris' may be another).",
        "**固定词元。** 输入一个或多个词元，用逗号分隔，再选一个透镜读取过的位置：图中画出每一层在该位置给每个词元的概率，并画出实际出现的下一个词元（虚线）作比较。每一个都必须恰好是词表中的一个词元，按输入的样子算：开头的空格也算（' Paris' 是一个词元，'Paris' 可能是另一个）。",
    ),
    "lens_pins": ("Tokens to pin (comma-separated, a leading space counts)", "要固定的词元（用逗号分隔，开头的空格也算）"),
    "lens_position": ("Position", "位置"),
    "btn_lens_pin": ("Chart the pinned tokens", "画出固定的词元"),
    "lens_pin_label": ("Pinned tokens through the layers", "固定词元在各层的概率"),
    "lens_window": ("Positions to read (the last ones)", "要读取的位置数（最后几个）"),
    "btn_lens": ("Read every layer", "读取每一层"),
    "lens_result": ("{layers} layers × {n} positions ({ms} ms). The top row against the model's own logits: largest difference {diff}, float error: it is the model's output.",
                    "得到 {layers} 层 × {n} 个位置（{ms} 毫秒）。最上一行与模型自己的 logits 相比：最大差 {diff}，只是浮点误差：它就是模型的输出。"),
    "lens_bounded": ("It reads the last {n} positions, not {asked}: each cell is a softmax over all {vocab} tokens of the vocabulary, and the server bounds that work so the class's steps keep their share.",
                     "只读取最后 {n} 个位置，而不是 {asked} 个：每个格子都要对词表中全部 {vocab} 个词元做 softmax，服务器限制了这部分计算量，好让全班的步骤照常进行。"),
    # ---- two models on one text (ui/views/two_models.py) ----
    "tab_two_models": ("Two models", "两个模型"),
    "explain_two_models": (
        "The same text read by SmolLM2 and Gemma 3 270M. Their tokenizers cut it differently, so their tokens do not line up; characters do. Each token's surprisal (−log₂ of the probability the model gave it) is spread evenly over the bytes it covers, and each character gets the shares of its bytes: the characters add up to the text's log P in each model. Each model reads the text exactly as a raw prompt.",
        "同一段文本分别由 SmolLM2 和 Gemma 3 270M 来读。它们的分词器切法不同，词元对不齐；字符却能对齐。每个词元的意外度（模型给它的概率取 −log₂）平摊到它覆盖的字节上，每个字符得到它那些字节的份额：在每个模型里，所有字符加起来正好是整段文本的 log P。每个模型都把文本当作直接续写的提示词来读。"),
    "two_text": ("Text (scored by both, and the prompt both continue)", "文本（两个模型都给它打分，也是两者续写的提示词）"),
    "btn_two_score": ("Score with both models", "用两个模型打分"),
    "two_steps": ("Tokens each model writes", "每个模型续写的词元数"),
    "btn_two_continue": ("Continue with both", "两个模型都续写"),
    "explain_two_models_limits": (
        "What it does not show: which model is better in general. One short text says little, and a character's bits depend on how its token was cut (a token's cost is shared out evenly, which is a convention, not something the model computes). Only the sums over a stretch both tokenizers cut at the same places are each model's own numbers.",
        "它没有显示什么：哪个模型总体上更好。一小段文本说明不了多少；一个字符的比特数取决于它所在的词元怎么切（把一个词元的代价平均分摊是一种约定，不是模型算出来的）。只有在两个分词器切在同样位置的片段上求和，才是每个模型自己的数字。"),
    # ---- switching a part off (ui/views/ablation.py) ----
    "tab_ablation": ("Switch off", "关闭部件"),
    "explain_ablation": (
        "Switch one part of the model off and see what it was doing for your text: one attention head, a whole layer's attention, or a layer's MLP. By default its output is replaced by its **mean over the text** (every position gets the same, average output): the layers after it still receive a vector of the size they were trained on, so what changes is what this part said about *this* position. Setting it to **zero** is simpler, but the later layers then see a residual stream missing a whole term, which they never saw in training, so part of the change comes from that. Layers and heads count from 0, as in the Attention tab (the logit lens numbers layer 0's output as its row 1). Only your passes run with the part off: they run alone at the model's scheduler, and the class's steps never see it.",
        "关闭模型的一个部分，看看它为你的文本做了什么：一个注意力头、整层的注意力，或一层的 MLP。默认把它的输出替换为**它在整段文本上的均值**（每个位置得到同一个平均输出）：后面的层仍收到训练时那种尺度的向量，所以变化的是这个部分对*当前*位置所说的内容。**置零**更简单，但后面的层会看到缺了一整项的残差流，这是训练中从未见过的，所以一部分变化来自这一点。层和注意力头从 0 开始编号，与注意力标签页一致（逻辑透镜把第 0 层的输出画在第 1 行）。只有你的前向传播会关闭该部分：它们在模型的调度器里单独运行，全班的步骤不会受影响。"),
    "explain_ablation_limits": (
        "What it does not show: one part switched off at a time says what the model loses without it *here*, not what the part \"does\" in general; another part can take over its work (the later layers often compensate), and two parts that each matter little can matter together. The continuation runs your whole text again with the part off, since every cached key and value after that part depends on it.",
        "它不能说明的：一次只关闭一个部分，只能说明模型在*这里*没有它会失去什么，而不是这个部分一般“做什么”；别的部分可能接替它的工作（后面的层常常会补偿），两个各自影响不大的部分合在一起也可能很重要。续写时会在关闭该部分的情况下重新运行整段文本，因为该部分之后缓存的每个键和值都依赖于它。"),
    "abl_kind": ("Part to switch off", "要关闭的部分"),
    "abl_kind_head": ("one head", "一个注意力头"),
    "abl_kind_attention": ("a layer's attention", "一层的注意力"),
    "abl_kind_mlp": ("a layer's MLP", "一层的 MLP"),
    "abl_layer": ("Layer (from 0)", "层（从 0 开始）"),
    "abl_head": ("Head (for one head)", "注意力头（仅用于单个头）"),
    "abl_method": ("Replace its output by", "将它的输出替换为"),
    "abl_by_mean": ("its mean over the text (default)", "它在文本上的均值（默认）"),
    "abl_by_zero": ("zero", "零"),
    "abl_steps": ("Tokens to continue", "续写的词元数"),
    "btn_ablation": ("Switch off and compare", "关闭并比较"),
    "abl_result": ("KL(before ‖ after) = {kl} nats; the largest logit moved by {diff}. {passes} passes ({ms} ms), every one through the model's scheduler, the part switched off only inside yours; switched back on, the model gives exactly its numbers before.",
                   "KL(之前 ‖ 之后) = {kl} 奈特；变化最大的 logit 变了 {diff}。共 {passes} 次前向传播（{ms} 毫秒），每次都经过模型的调度器，只有你的传播中该部分被关闭；重新开启后，模型给出的数值与之前完全相同。"),
    # ---- activation patching view (ui/views/patching.py) ----
    "tab_patching": ("Patching", "激活修补"),
    "explain_patching": (
        "Activation patching asks where in the model an answer is carried. Two prompts differ in one word: after prompt 1 the model says ' Paris', after prompt 2 ' Rome'. Run prompt 2 again, but replace ONE vector with prompt 1's: the residual stream entering one layer at one position. If the answer moves back to ' Paris', that vector carried it. Each cell of the grid is one such run: its colour is how much of the answer's probability came back, (P<sub>patched</sub> − P<sub>2</sub>) / (P<sub>1</sub> − P<sub>2</sub>): 1 all of it, 0 none. The two prompts must have the same number of tokens, so that every position has its partner. The answer is prompt 1's most likely next token unless you type one (one token; a leading space counts).",
        "激活修补要回答：答案是在模型的哪里被携带的。两个提示词只差一个词：提示词 1 之后模型说“ Paris”，提示词 2 之后说“ Rome”。把提示词 2 再运行一遍，但把其中一个向量换成提示词 1 的：进入某一层、某一位置的残差流。如果答案回到了“ Paris”，就说明这个向量携带了它。网格的每一格就是这样一次运行：颜色表示答案的概率恢复了多少，(P<sub>修补</sub> − P<sub>2</sub>) / (P<sub>1</sub> − P<sub>2</sub>)：1 表示全部恢复，0 表示没有。两个提示词的词元数必须相同，这样每个位置都有对应的位置。答案默认是提示词 1 最可能的下一个词元，也可以自己输入（一个词元；开头的空格也算）。"),
    "explain_patching_limits": (
        "What it does not show: a cell says that copying that one vector is enough to move the answer, not that the model 'stores the fact' there, nor that nothing else could carry it (other positions, or many small pieces together). The picture depends on the pair of prompts and the answer you pick. Each layer's row is one batched pass of the model (one copy of prompt 2 per position), so the grid is layers × positions runs.",
        "它没有显示什么：一个格子说明，只复制那一个向量就足以让答案改变，并不说明模型把“事实存放”在那里，也不说明别处不能携带它（其他位置，或许多小的部分合起来）。结果取决于你选的两个提示词和答案。每一层的一行是模型的一次批量前向（每个位置一份提示词 2 的副本），所以整个网格是“层数 × 位置数”次运行。"),
    "patch_clean": ("Prompt 1 (the source: its vectors are copied)", "提示词 1（来源：复制它的向量）"),
    "patch_corrupted": ("Prompt 2 (one word changed: the run that is patched)", "提示词 2（换了一个词：被修补的运行）"),
    "patch_answer": ("Answer token (empty: prompt 1's most likely next token)", "答案词元（留空：提示词 1 最可能的下一个词元）"),
    "btn_patch": ("Patch every layer and position", "修补每一层、每个位置"),
    "patch_result": ("After prompt 1 the model gives {answer} {clean}; after prompt 2, {corrupted} (its top token there: {top}, {top_p}). The strongest single vector: the input of layer {layer} at position {pos} ({tok}) restores {effect} of the difference. {passes} passes, {ms} ms.",
                     "提示词 1 之后，模型给 {answer} 的概率是 {clean}；提示词 2 之后是 {corrupted}（那里的最高词元：{top}，{top_p}）。作用最强的单个向量：第 {layer} 层在位置 {pos}（{tok}）的输入，恢复了差距的 {effect}。共 {passes} 次前向，{ms} 毫秒。"),
    # ---- heads view (ui/views/heads.py) ----
    "tab_heads": ("Heads", "注意力头"),
    "explain_heads": (
        "Each attention head learns its own habit. To find them, the page makes a text for the purpose: a random sequence of tokens from the model's vocabulary, said twice. It runs it once and scores every head by where its attention goes. **Previous-token heads** look at the token just before: they let the next layers know which token came before each one, the first half of copying. **Induction heads** look, from a token in the second copy, at the token that came right after its earlier copy: they find where the current token was seen before and copy what followed it, which is how a model continues a pattern it has seen in its context (in-context repetition). **Sink heads** park their attention on the first token: when a head has nothing useful to read, its weights must still sum to 1, and the first token serves as a no-op. Click a head to open it in the Attention view (on your own text).",
        "每个注意力头都学到了自己的习惯。为了找到它们，页面专门生成一段文本：从模型词表中随机抽取的一串词元，重复说两遍。运行一次，按每个头的注意力落在哪里给它打分。**前一个词元头**看紧挨着的前一个词元：让后面的层知道每个词元前面是什么，这是复制的前一半。**归纳头**从第二遍中的某个词元出发，去看它在第一遍出现时紧跟其后的那个词元：它找到当前词元以前在哪里出现过，并复制后面跟着的内容，模型就是这样延续上下文里见过的模式（上下文中的重复）。**汇点头**把注意力停放在第一个词元上：当一个头没有有用的东西可读时，它的权重之和仍必须是 1，第一个词元就充当一个“什么都不做”的位置。点击一个头，可以在“注意力”视图中打开它（看你自己的文本）。"),
    "explain_heads_limits": (
        "What it does not show: a score is a mean attention weight on one made-up text, not what the head writes into the residual stream; attention weights are not explanations. A head can do more than one thing, and a head that is a clear induction head here may behave differently on ordinary prose. The control text (the same length, no repetition) shows the induction score is about the repetition: there it stays near 0.",
        "它没有显示什么：得分是一段人造文本上的平均注意力权重，不是这个头写进残差流的内容；注意力权重并不是解释。一个头可以做不止一件事，在这里表现为明显归纳头的头，在普通文章上可能表现不同。对照文本（同样长度，没有重复）说明归纳得分来自重复：在对照文本上它接近 0。"),
    "btn_heads": ("Score every head", "给每个头打分"),
    "heads_result": ("Scored on a random sequence of {n} tokens said twice ({ms} ms). The heads with the highest scores:",
                     "在说了两遍的 {n} 个随机词元上打分（{ms} 毫秒）。得分最高的头："),
    "heads_named": ("L{layer} H{head} ({score})", "L{layer} H{head}（{score}）"),
    "heads_named_induction": ("L{layer} H{head} ({score}; {control} on the control text)",
                              "L{layer} H{head}（{score}；对照文本上 {control}）"),
    "heads_pick_bad": ("A head is named as 'layer,head' (two whole numbers), got {value}.",
                       "一个头要写成“层,头”（两个整数），收到的是 {value}。"),
    "heads_pick_range": ("This model has {layers} layers of {heads} heads: there is no layer {layer}, head {head}. Score the heads again for this model.",
                         "这个模型有 {layers} 层、每层 {heads} 个头：没有第 {layer} 层的第 {head} 个头。请为这个模型重新给头打分。"),
    # ---- sampler race view (ui/views/race.py) ----
    "tab_race": ("Sampler race", "采样器比赛"),
    "explain_race": (
        "Two settings continue your text side by side. Side A uses the settings on the left, side B the ones below; both use the same seed, so at every step both draw with the same random number u. While they pick the same token they write the same text; the first step where they differ is marked, and from there each goes its own way. Each side shows its log P (under the model's own distribution at T = 1, and under the distribution it actually drew from) and the entropy at each step.",
        "两种设置并排续写你的文本。A 方用左边的设置，B 方用下面的设置；两边使用同一个种子，所以每一步都用同一个随机数 u 来抽取。只要它们选中同一个词元，写出的文本就相同；第一个不同的步骤会被标出，从那里起各走各的路。每一方都显示它的 log P（在模型自己 T = 1 的分布下，以及在它实际抽取的分布下）和每一步的熵。"),
    "race_b_heading": ("Side B's settings (seed and repetition penalty: side A's)", "B 方的设置（种子和重复惩罚与 A 方相同）"),
    "race_steps": ("Steps to race", "比赛的步数"),
    "btn_race": ("Race", "开始比赛"),
    # ---- beams view (ui/views/beams.py) ----
    "tab_beams": ("Beams", "束搜索"),
    "explain_beams": (
        "**Beam search** keeps the B likeliest partial texts (*beams*) instead of one. Each step extends every live "
        "beam by every token and looks at the extensions with the highest cumulative log P (2B of them): the B best "
        "that did not end go on (blue), those that ended join the finished list (squares), the rest are pruned "
        "(grey). A finished beam is ranked by log P / length^penalty: a penalty above 0 favours longer texts, below 0 "
        "shorter ones. Greedy decoding is B = 1. **Good at:** finding text the model finds likelier than greedy does, "
        "where one answer is right (translation, a short fact). **Bad at:** open writing: the likeliest text is often "
        "the blandest, and it loops. Compare the beams' log P and repeated n-grams with the sampled text below. "
        "Press Search, then Next step to grow the tree.",
        "**束搜索**同时保留 B 个最可能的部分文本（称为*束*），而不是只保留一个。每一步把每个活跃的束用每个词元延长，"
        "查看累计 log P 最高的那些延长（2B 个）：没有结束的前 B 个继续下去（蓝色），已结束的进入完成列表（方块），"
        "其余被剪掉（灰色）。完成的束按 log P / 长度^惩罚 排序：惩罚大于 0 偏向较长的文本，小于 0 偏向较短的。"
        "贪心解码就是 B = 1。**擅长**：找到比贪心更可能的文本，适合只有一个正确答案的任务（翻译、简短的事实）。"
        "**不擅长**：开放式写作：最可能的文本往往最平淡，而且会循环重复。请对比下方各束与采样文本的 log P 和重复的 n 元组。"
        "按“搜索”，再按“下一步”看树一步步长出来。"),
    "beams_width": ("beam width B", "束宽 B"),
    "beams_penalty": ("length penalty", "长度惩罚"),
    "beams_tokens": ("new tokens, at most", "最多生成的词元数"),
    "btn_beams_search": ("Search", "搜索"),
    "btn_beams_next": ("Next step", "下一步"),
    "btn_beams_all": ("Run to the end", "运行到底"),
    "beams_step_line": ("Step {step} of {steps}: {live} live beams extended; of the {k} best extensions, {kept} kept, "
                        "{finished} finished, {pruned} pruned.",
                        "第 {step} 步（共 {steps} 步）：延长了 {live} 个活跃的束；在最好的 {k} 个延长中，保留 {kept} 个，"
                        "完成 {finished} 个，剪掉 {pruned} 个。"),
    "beams_end_line": ("The search stopped after {steps} steps: {why}. Best beam: log P {logp} over {n} tokens; "
                       "greedy: {glogp} over {gn}; sampled: {slogp} over {sn}.",
                       "搜索在 {steps} 步后停止：{why}。最好的束：{n} 个词元，log P {logp}；贪心：{gn} 个词元，{glogp}；"
                       "采样：{sn} 个词元，{slogp}。"),
    "beams_stopped_limit": ("it reached the limit of new tokens", "达到了新词元数的上限"),
    "beams_stopped_no_better": ("no live beam could still beat the finished ones",
                                "已没有活跃的束能超过已完成的束"),
    "beams_timing": ("Searched in {seconds} s on this machine ({passes} passes over {width} beams), with the greedy "
                     "and the sampled text.",
                     "在本机用时 {seconds} 秒完成搜索（{passes} 次前向计算，每次 {width} 个束），包括贪心和采样文本。"),
    "beams_texts_waiting": ("The finished beams, set beside the greedy and the sampled text, appear at the last step.",
                            "到最后一步时，这里会列出完成的束，并与贪心和采样文本对照。"),
    "beams_search_first": ("Press Search first: there is no search to step through yet.",
                           "请先按“搜索”：还没有可以逐步查看的搜索。"),
    "beams_prompt_changed": ("The prompt changed since this search: press Search again.",
                             "自这次搜索以来提示词已改变：请再按一次“搜索”。"),
    # ---- constraints view ---- (ui/views/constraints.py)
    "tab_constraints": ("Constraints", "约束解码"),
    "explain_constraints": (
        "A constraint adds one more cut to every step: the tokens that cannot lead to an allowed answer get probability 0 (✂ grammar, drawn on the same chart as the other cuts), and the rest share what they held. It runs before temperature and the other cuts, as in Hugging Face's generate(). The masks come from llguidance, the library vLLM uses for structured output. Press *Write under the constraint*: the model continues your text, one forward pass per token, under your sampling settings; your own text is not changed.",
        "约束给每一步再加一道截断：不可能通向允许答案的词元概率变为 0（✂ 语法，和其他截断画在同一张图上），剩下的词元分掉它们原来的概率。它在温度和其他截断之前执行，与 Hugging Face 的 generate() 相同。掩码来自 llguidance，也就是 vLLM 做结构化输出所用的库。点“在约束下续写”：模型按你的采样设置续写你的文本，每个词元一次前向计算；你自己的文本不会改变。",
    ),
    "constrain_kind": ("Constraint", "约束类型"),
    "constrain_kind_words": ("one of these words", "以下词之一"),
    "constrain_kind_regex": ("regular expression", "正则表达式"),
    "constrain_kind_json": ("JSON shape (schema)", "JSON 结构（模式）"),
    "constrain_text": ("Allowed words (one per line or comma), pattern, or JSON schema",
                       "允许的词（每行一个或用逗号分隔）、正则表达式或 JSON 模式"),
    "constrain_tokens": ("Tokens to write at most", "最多写的词元数"),
    "constrain_step": ("Step to show", "显示第几步"),
    "btn_constrain_run": ("Write under the constraint", "在约束下续写"),
    "constrain_summary": (
        "Wrote `{text}` in {tokens} tokens ({ended}), {seconds} s. At each step the constraint allowed between {fewest} and {most} tokens of {vocab}, and removed on average {mean} of the probability (the most, {worst}, at step {worst_step}).",
        "写出了 `{text}`，共 {tokens} 个词元（{ended}），用时 {seconds} 秒。每一步约束允许 {vocab} 个词元中的 {fewest} 到 {most} 个，平均去掉 {mean} 的概率（最多的一步是第 {worst_step} 步，去掉 {worst}）。",
    ),
    "constrain_ended_eos": ("the constraint was satisfied and the text ended", "约束已满足，文本结束"),
    "constrain_ended_length": ("the token budget ran out before the text ended", "文本结束前用完了词元数"),
    "constrain_no_run": ("Write under the constraint first.", "请先在约束下续写。"),
    "lens_no_run": ("Read every layer first: the pinned tokens are read from the lens.", "请先读取每一层：固定的词元是从逻辑透镜的读数中读出的。"),
    # ---- consistency view ---- (ui/views/consistency.py)
    "tab_consistency": ("Self-consistency", "自洽投票"),
    "explain_consistency": (
        "Ask the same question several times with sampling and let the answers vote (self-consistency). The samples continue your text under your sampling settings, sample i with seed + i − 1, all in one batched forward pass per step; the greedy answer (T = 0) is written beside them. {rule} A small model is often wrong, and so is its vote: watch how the vote moves as N grows and with temperature. Works best with a short question in chat mode, such as “What is 7 + 5?”.",
        "用采样把同一个问题问好几次，让答案投票（自洽投票）。样本按你的采样设置续写你的文本，第 i 个样本用种子 seed + i − 1，每一步所有样本在一次批量前向计算里完成；旁边是贪心解码（T = 0）的答案。{rule}小模型经常答错，它的投票也会错：看看投票结果如何随 N 和温度变化。最适合对话模式下的简短问题，例如“What is 7 + 5?”。",
    ),
    "sc_answer_rule": (
        "The answer rule: the first number in a sample (every comma removed first, so 1,000 is 1000; its minus sign and decimals kept); if there is none, its first non-empty line, trimmed, lower-cased, without the full stops and exclamation marks that end it (. 。 ! ！), and cut to its first {chars} characters.",
        "答案规则：样本中的第一个数字（先去掉所有英文逗号，所以 1,000 记作 1000；保留负号和小数）；没有数字时取它的第一个非空行，去掉首尾空白，转为小写，去掉结尾的句号和感叹号（. 。 ! ！），并只保留前 {chars} 个字符。",
    ),
    "sc_texts_head": ("What each sample wrote, and the answer it votes for", "每个样本写了什么，以及它投给哪个答案"),
    "sc_text_greedy": ("★ greedy (T = 0)", "★ 贪心（T = 0）"),
    "sc_text_sample": ("sample {k} (seed {seed})", "样本 {k}（种子 {seed}）"),
    "sc_text_cut": ("… (ran out of tokens)", "……（词元数用完）"),
    "sc_samples": ("Samples N", "样本数 N"),
    "sc_tokens": ("Tokens per answer at most", "每个答案最多的词元数"),
    "btn_sc_run": ("Ask N times and vote", "问 N 次并投票"),
    "btn_sc_sweep": ("Vote at T = 0.3, 0.7, 1.0, 1.5", "在 T = 0.3、0.7、1.0、1.5 下投票"),
    "sc_summary": (
        "{n} samples in {passes} batched passes, {seconds} s: the vote is {majority} with {votes} of {n}; the greedy answer is {greedy}{agree}.",
        "{n} 个样本，{passes} 次批量前向计算，用时 {seconds} 秒：投票结果是 {majority}（{n} 票中 {votes} 票）；贪心答案是 {greedy}{agree}。",
    ),
    "sc_agrees": (" (they agree)", "（两者一致）"),
    "sc_disagrees": (" (they differ)", "（两者不同）"),
    "sc_sweep_line": ("T = {temperature}: vote {majority} ({votes} of {n}), {share} of the samples give the greedy answer {greedy}",
                      "T = {temperature}：投票结果 {majority}（{n} 票中 {votes} 票），{share} 的样本给出贪心答案 {greedy}"),
    # ---- rooms: the wall, seats kept by a heartbeat, one text per student, feedback after the reveal ----
    "btn_room_renew": ("New code (everyone out)", "换新课堂码（所有人退出）"),
    "room_qr_alt": ("QR code of the room's join link", "加入课堂链接的二维码"),
    # a lesson's question asked in a room, for a student whose language's lesson has another text or model
    "room_q_next_token": ("After “{text}”, which token do you think the model finds most likely?",
                          "在“{text}”之后，你认为模型觉得哪个词元最可能？"),
    "room_q_kept_by_top_p": ("With top-p = {top_p}, will “{token}” be kept?", "在 top-p = {top_p} 时，“{token}”会被保留吗？"),
    "room_q_cache_size": (
        "This model ({model}: {layers} layers, {kv_heads} KV heads of {head_dim}, {dtype}) holds {tokens} tokens. "
        "How big is its cache?",
        "这个模型（{model}：{layers} 层、{kv_heads} 个 {head_dim} 维的 KV 头、{dtype}）保存了 {tokens} 个词元。它的缓存有多大？"),
    "room_local_only": (
        "Only this machine can open this link: the server listens on a loopback address, so no phone can join. "
        "Restart it with --host 0.0.0.0 (or --public-url) to serve the class's network.",
        "只有这台电脑能打开这个链接：服务器只在本机回环地址上监听，学生的手机无法加入。"
        "请用 --host 0.0.0.0（或 --public-url）重新启动，让全班所在的网络都能访问。"),
    "room_joined": ("{n} students joined", "已加入 {n} 名学生"),
    "room_explore_after_reveal": ("The teacher is asking a question: explore on your own after the answer is revealed.",
                                  "老师正在提问：揭晓答案之后再自己探索。"),
    "room_feedback_none": ("You did not send a guess.", "你没有提交猜测。"),
    "room_feedback_token": ("Your guess {guess}: the model gave it {prob}, rank {rank}.",
                            "你的猜测 {guess}：模型给它的概率是 {prob}，排第 {rank} 位。"),
    "room_feedback_right": ("Your guess {guess} was right.", "你的猜测 {guess} 是对的。"),
    "room_feedback_wrong": ("Your guess {guess} was not right.", "你的猜测 {guess} 不对。"),
    "room_feedback_top": ("The model's most likely next token: {token} ({prob}).", "模型认为最可能的下一个词元：{token}（{prob}）。"),
    "room_feedback_you": ("you", "你"),
    "room_feedback_class": ("How the class answered ({n} guesses):", "全班的回答（{n} 个猜测）："),

    # ---- lessons: one place, Reveal, a model per language ----
    "lesson_reveal": ("Reveal the answer", "揭晓答案"),
    "lesson_reveal_answer": ("The model's most likely next token is {top} at **{top_prob}** (of {vocab:,} tokens); with this step's settings it wrote {chosen}.",
                             "模型认为最可能的下一个词元是 {top}，概率 **{top_prob}**（共 {vocab:,} 个词元）；在这一步的设置下，它写出的是 {chosen}。"),
    # ---- chinese: the model picker, the tokenizers view ----
    "model_notes": ("SmolLM2: English, grouped-query attention 9 → 3. Gemma 3 270M: Chinese and English, one KV "
                    "head, sliding-window layers.",
                    "SmolLM2：英文，分组查询注意力 9 → 3。Gemma 3 270M：中文和英文，一个 KV 头，滑动窗口层。"),
    "tab_tokenizers": ("Tokenizers", "分词器"),
    "tok_text": ("Text to put through both tokenizers", "交给两个分词器的文本"),
    "tok_go": ("Compare", "比较"),
    "explain_tokenizers": (
        "A model never sees characters: its tokenizer cuts the text into pieces from a fixed vocabulary. SmolLM2's "
        "byte-level BPE learned mostly English, so a Chinese character often costs it two or three byte tokens "
        "(drawn here as one character over its bytes); Gemma 3's 262,144-token SentencePiece vocabulary has most "
        "characters whole. Each token is one decode step and one row of the KV cache "
        "(2 × layers × KV heads × head size × bytes), so the same sentence costs a different amount in each model.",
        "模型看不到字符：分词器把文本切成固定词表中的片段。SmolLM2 的字节级 BPE 主要在英文上学成，一个汉字常常要两三个字节词元"
        "（这里画成一个字符压在它的字节上面）；Gemma 3 的 SentencePiece 词表有 262,144 个词元，大多数汉字是完整的一个词元。"
        "每个词元就是一步解码、KV 缓存中的一行（2 × 层数 × KV 头数 × 头维度 × 字节数），所以同一句话在两个模型里的代价不同。"),
    # ---- class: the class as the sampler, beat the model (ui/class_play.py) ----
    "cp_teacher": ("The class plays: the class as the sampler, beat the model (for the teacher)",
                   "全班一起玩：全班来抽样、战胜模型（老师用）"),
    "cp_explain": ("**The class as the sampler.** Each student's device draws the next token of your text from "
                   "your distribution (your settings; the temperature the button names), with a random number u of "
                   "its own, by the same draw the app uses. The wall counts the draws beside what p expects. Try "
                   "your settings, then T = 0.3 and T = 1.5.",
                   "**全班来抽样。** 每位学生的设备用自己的随机数 u，按本应用同样的抽样方法，从你的分布（你的设置；温度按按钮所写）"
                   "中抽出你文本的下一个词元。大屏上统计全班抽到的次数，并与 p 期望的次数并排显示。先用你的设置，再试 T = 0.3 和 T = 1.5。"),
    "btn_cp_draw": ("Class draws: my settings", "全班抽样：我的设置"),
    "btn_cp_draw_cold": ("Class draws: T = 0.3", "全班抽样：T = 0.3"),
    "btn_cp_draw_hot": ("Class draws: T = 1.5", "全班抽样：T = 1.5"),
    "btn_cp_draw_mine": ("Draw my token", "抽我的词元"),
    "cp_draw_ask": ("The teacher asks your device to draw the next token from the model's distribution "
                    "(T = {temperature}). Press the button: your device picks its own random number u.",
                    "老师请你的设备从模型的分布（T = {temperature}）中抽出下一个词元。按下按钮：你的设备会自己选一个随机数 u。"),
    "cp_drew": ("Your device drew {token} (u = {u}). The wall shows the whole class's draws.",
                "你的设备抽到了 {token}（u = {u}）。大屏上显示全班的抽样结果。"),
    "cp_stats": ("χ² = {chi2} over {bins} bins ({dof} degrees of freedom) · total variation distance = {tv} "
                 "(the share of draws that would have to move to match p exactly) · p-value = {p}",
                 "χ² = {chi2}，共 {bins} 组（自由度 {dof}）· 总变差距离 = {tv}（要与 p 完全一致需要挪动的抽样比例）· p 值 = {p}"),
    "cp_meaning_fits": ("In {share} of {classes} simulated classes of {n} drawing from p, the counts were at least "
                        "this far from p: the class's draws look like draws from the model's distribution, and the "
                        "gaps are chance.",
                        "在 {classes} 个模拟的 {n} 人班级（都从 p 抽样）中，有 {share} 的班级与 p 的差距至少这么大："
                        "全班的抽样看起来就是从模型的分布中抽出来的，差距只是偶然。"),
    "cp_meaning_off": ("Only {share} of {classes} simulated classes of {n} drawing from p were this far from p: "
                       "draws from p rarely look like this.",
                       "在 {classes} 个模拟的 {n} 人班级（都从 p 抽样）中，只有 {share} 的班级与 p 的差距这么大："
                       "从 p 抽样很少会是这个样子。"),
    "cp_meaning_few": ("{n} draws so far: too few to say whether they follow p.",
                       "目前只有 {n} 次抽样：太少了，还看不出是否符合 p。"),
    "game_explain": ("**Beat the model.** Pick a short text (at most 200 characters; what comes before | is shown, "
                     "otherwise its first word; at most 16 tokens to guess). Before each token the students type "
                     "their guess (right if it equals the token, spaces and letter case ignored); then reveal it. "
                     "Scores in bits, lower is better: the model −log₂ p(token), p from one forward pass over the "
                     "whole text (their mean is its cross-entropy); the class −log₂((k + 1)/(n + 2)) when k of the n "
                     "students who guessed were right (as if two more had guessed, one right: a token nobody guessed "
                     "costs log₂(n + 2) bits, not infinity).",
                     "**战胜模型。** 选一段短文本（最多 200 个字符；| 前面的部分直接显示，没有 | 就显示第一个词；最多猜 16 个词元）。"
                     "每个词元揭晓前，学生输入自己的猜测（与该词元相同即算对，忽略空格和大小写）；然后揭晓。"
                     "得分以比特计，越低越好：模型是 −log₂ p(词元)，p 来自对整段文本的一次前向计算（其平均值就是交叉熵）；"
                     "全班是 −log₂((k + 1)/(n + 2))，其中 n 个作答的学生里有 k 个猜中（相当于多了两个人作答、其中一人猜中："
                     "没人猜中的词元记 log₂(n + 2) 比特，而不是无穷大）。"),
    "game_text": ("A short text for the class to guess", "让全班来猜的一段短文本"),
    "btn_game_start": ("Start the game", "开始游戏"),
    "btn_game_reveal": ("Reveal the next token", "揭晓下一个词元"),
    "game_guess": ("Your guess for the next token", "你对下一个词元的猜测"),
    "btn_game_send": ("Send my guess", "发送猜测"),
    "game_sent": ("Guess sent: {guess}", "已发送猜测：{guess}"),
    "game_so_far": ("The text so far:", "目前的文本："),
    "game_ask": ("Guess the next token before the teacher reveals it.", "在老师揭晓之前，猜猜下一个词元。"),
    "game_last": ("It was {token}: {mine}. {right} of {answered} in the class guessed it; the model gave it {p}.",
                  "答案是 {token}：{mine}。全班 {answered} 人中有 {right} 人猜中；模型给它的概率是 {p}。"),
    "game_you_right": ("you guessed {guess}, right", "你猜的是 {guess}，猜对了"),
    "game_you_wrong": ("you guessed {guess}", "你猜的是 {guess}"),
    "game_you_none": ("you did not guess", "你没有猜"),
    "game_over_student": ("The game is over: the class {klass} bits, the model {model} bits (lower is better).",
                          "游戏结束：全班 {klass} 比特，模型 {model} 比特（越低越好）。"),
    "game_wall_text": ("Token {at} of {total} revealed: {text}", "已揭晓 {total} 个词元中的 {at} 个：{text}"),
    "game_wall_wait": ("The class is guessing the first token.", "全班正在猜第一个词元。"),
    "game_wall_score": ("The class: {klass} bits over {n} tokens ({kmean} per token); the model: {model} bits "
                        "({mmean} per token: its cross-entropy on these tokens, from one forward pass).",
                        "全班：{n} 个词元共 {klass} 比特（每个词元 {kmean}）；模型：{model} 比特（每个词元 {mmean}："
                        "即它在这些词元上的交叉熵，来自一次前向计算）。"),
    "game_class_wins": ("The class is ahead: it was less surprised than the model.", "全班领先：它比模型更少感到意外。"),
    "game_model_wins": ("The model is ahead: it was less surprised than the class.", "模型领先：它比全班更少感到意外。"),
    "game_wall_over": ("Game over. The model's cross-entropy on the whole text: {ce} bits per token.",
                       "游戏结束。模型在整段文本上的交叉熵：每个词元 {ce} 比特。"),
    # ---- guard: the queue's share per address (ui/guard.py) ----
    "queue_network_busy": ("Your network already has {n} requests waiting; try again in a moment.",
                           "你的网络已有 {n} 个请求在等待；请稍后再试。"),
    "queue_network_slow_busy": ("Your network already has {n} requests of this kind waiting; try again in a few seconds.",
                                "你的网络已有 {n} 个同类请求在等待；请几秒后再试。"),
    "queue_steps_only": ("The server is busy: only steps are taken just now; try again in a moment.",
                         "服务器正忙：现在只接受生成步骤；请稍后再试。"),
    # ---- projector: presenter mode, the engines' words (issue 22) ----
    "presenter_mode": ("Presenter mode", "演示模式"),
    "predict_first": ("Predict first", "先猜后看"),
    "paged_summary_one": (
        "1 live session in {blocks}: **{paged}** paged (of which {waste} empty slots in its last block, and {shared} saved by shared prefixes), against **{reserved}** if it reserved {max} tokens.",
        "1 个活跃会话，共 {blocks}：分页占用 **{paged}**（其中最后一块的空位 {waste}，共享前缀省下 {shared}），而如果它预留 {max} 个词元，需要 **{reserved}**。",
    ),
    "paged_one_block": ("1 block", "1 个块"),
    "paged_engine_summary": (
        "**The engine's own blocks**, from its KV cache events: {stored} stores and {removed} removals so far, {live} different blocks in its cache now (a block computed again, as a request that skips the prefix cache does, is stored again under the same hash). Below, each session's full blocks at the engine's {block} tokens per block, named by the engine's hash: the same hash in two rows is one block held once.",
        "**引擎自己的块**，来自它的 KV 缓存事件：到目前为止共有 {stored} 次存储、{removed} 次移除，现在缓存里有 {live} 个不同的块（同一个块被重新计算时，比如一个不读前缀缓存的请求，会以相同的哈希再存储一次）。下图按引擎的块大小（每块 {block} 个词元）列出每个会话的满块，用引擎的哈希命名：两行里相同的哈希就是同一个块，只存一份。",
    ),
    # The engine's own sampler beside the candidates chart (ui/views/candidates.py, model/vllm/processed.py)
    "processed_agree": (
        "The engine's own sampler (vLLM's processed log-probabilities) agrees with this chart: the largest difference is {diff} over {n} tokens, and both keep the same ones.",
        "引擎自己的采样器（vLLM 的 processed 对数概率）与此图一致：{n} 个词元中最大差异为 {diff}，两边保留的词元相同。",
    ),
    "processed_differ": (
        "The engine's own sampler differs from this chart under the same settings: the largest difference is {diff} over {n} tokens, and {only} of them are kept on one side only.",
        "在相同设置下，引擎自己的采样器与此图不同：{n} 个词元中最大差异为 {diff}，其中 {only} 个只被一方保留。",
    ),
    "processed_why_greedy": (
        "At temperature 0 the engine does not sample: the numbers it returns are after its repetition penalty only, while this chart keeps just the most probable token (largest difference {diff}).",
        "温度为 0 时引擎并不采样：它返回的数值只经过了重复惩罚，而此图只保留最可能的那一个词元（最大差异 {diff}）。",
    ),
    "processed_why_order": (
        "The engine runs its stages in one fixed order (repetition penalty, temperature, min-p, top-k, top-p); with these settings this chart's order gives a different result (largest difference {diff}).",
        "引擎总是按固定顺序执行各阶段（重复惩罚、温度、min-p、top-k、top-p）；在这些设置下，此图的阶段顺序会得出不同的结果（最大差异 {diff}）。",
    ),
    "processed_why_approximate": (
        "This chart is approximate here: its cuts see only the engine's top tokens, while the engine's own sampler saw the whole vocabulary (largest difference {diff} over {n} tokens).",
        "此图在这里是近似的：它的截断只看到引擎给出的前几个词元，而引擎自己的采样器看到的是整个词表（{n} 个词元中最大差异为 {diff}）。",
    ),
    "processed_fault": (
        "The engine's own sampler could not be asked: {why}",
        "无法向引擎自己的采样器询问：{why}",
    ),
    "paged_engine_silent": (
        "The engine has sent no KV cache events: it publishes them only when started with prefix caching and --kv-events-config pointing at this server's --engine-kv-events address.",
        "引擎没有发来任何 KV 缓存事件：只有在启动时开启前缀缓存，并用 --kv-events-config 指向本服务器的 --engine-kv-events 地址，它才会发布这些事件。",
    ),
    "paged_blocks": ("{n} blocks", "{n} 个块"),
    "btn_spec_example": ("Try it on a text that repeats itself (code), where the draft pays",
                         "换一段会重复自身的文本（代码）试试，草稿在这里划算"),
    "batch_engine_caption": (
        "This model runs on an engine, which batches its requests itself: the chart shows **the engine's own numbers**, "
        "read from its /metrics every {poll} s while this tab is open, not the app's passes. KV cache in use is the "
        "share of the engine's cache blocks holding someone's tokens; the hit rate is the share of prompt tokens the "
        "engine found already computed in its prefix cache.",
        "这个模型运行在推理引擎上，引擎自己给请求组批：图中是**引擎自己的运行数据**，打开本标签页时每 {poll} 秒从它的 "
        "/metrics 读一次，而不是本应用的计算记录。KV 缓存占用是引擎缓存块中正存着词元的比例；命中率是提示词元中"
        "引擎在前缀缓存里找到、无需重新计算的比例。"),
    "batch_engine_paused": (
        "The engine's numbers stopped updating after {minutes} minutes; press the button above to follow them again.",
        "引擎的数据在 {minutes} 分钟后停止更新；点上方的按钮即可继续跟踪。"),
    "names_batching": (
        "In an interview's words: this is **continuous batching** (vLLM, TGI, SGLang): sequences join and leave the "
        "running batch at every step, not once per batch, so a new user never waits for the others to finish. A decode "
        "step is bound by memory bandwidth (every weight is read once per pass), so one pass for 16 sequences costs "
        "little more than for one.",
        "用面试里的说法：这就是**连续批处理**（continuous batching，vLLM、TGI、SGLang 都这样做）：序列在每一步都可以加入或离开正在运行的批，"
        "而不是每批只换一次，所以新用户不必等别人写完。解码一步受内存带宽限制（每次前向计算把每个权重读一遍），所以 16 个序列一次计算的代价只比 1 个多一点。",
    ),
    "names_paged": (
        "In an interview's words: this is **PagedAttention** (Kwon et al., 2023, the idea behind vLLM): the KV cache "
        "kept in fixed-size blocks, like pages of virtual memory, with a block table per sequence; attention reads the "
        "blocks where they lie. Waste is under one block per sequence, and a shared prompt's blocks are stored once "
        "(prefix caching).",
        "用面试里的说法：这就是 **PagedAttention**（分页注意力，Kwon 等，2023，vLLM 的核心思想）：KV 缓存像虚拟内存的页一样存放在固定大小的块里，"
        "每个序列有一张块表；注意力直接从块所在的位置读取。每个序列浪费不到一个块，共享的提示词块只存一份（前缀缓存）。",
    ),
    "names_kv_cache": (
        "In an interview's words: **prefill** is the first pass over the whole prompt, in parallel (compute-bound); "
        "**decode** is each step after it, one token at a time over the cache (bound by memory bandwidth). The "
        "prompt's keys and values written by prefill are the cache's first rows here; each decode step adds one.",
        "用面试里的说法：**预填充**（prefill）是对整个提示词的第一次并行计算（受算力限制）；**解码**（decode）是之后的每一步，"
        "借助缓存一次写一个词元（受内存带宽限制）。这里缓存的前几行就是预填充写下的提示词的键和值，每个解码步再加一行。",
    ),
    # --- Interview questions (ui/views/interview.py): no figure typed in an answer, each is a {placeholder} ---
    "tab_interview": ("Interview questions", "面试问题"),
    "interview_intro": (
        "The questions ML interviews ask about decoding. For each one, say your own answer out loud first, then press "
        "**Show the answer** and compare: a 30-second answer you could give. The button beside it opens the lesson "
        "or tab where the app shows it happening. This browser remembers which questions you have revealed or opened (✔).",
        "机器学习面试里常问的解码问题。每道题先大声说出你自己的答案，再点**显示答案**对照：一个 30 秒就能说完的回答。"
        "旁边的按钮会打开讲解它的课程或标签页，让你在应用里亲眼看到。这个浏览器会记住你看过答案或打开过的题目（✔）。"),
    "interview_summary": ("{done} of {total} questions revealed or opened in this browser.",
                          "在这个浏览器中，{total} 道题里已看过或打开过 {done} 道。"),
    "interview_myth": ("Common wrong answer: {myth}", "常见的错误回答：{myth}"),
    "interview_where": ("Answered in: {places}", "讲解位置：{places}"),
    "interview_lesson_place": ("lesson “{title}”", "课程《{title}》"),
    "interview_tab_place": ("tab “{tab}”", "标签页“{tab}”"),
    "interview_marks_revealed": ("answer seen", "已看答案"),
    "interview_marks_opened": ("opened", "已打开"),
    "btn_interview_reveal": ("Show the answer", "显示答案"),
    "interview_answer_lead": ("A 30-second answer:", "30 秒回答："),
    "btn_interview_lesson": ("Open the lesson “{title}” ▶", "打开课程《{title}》▶"),
    "btn_interview_tab": ("Open the tab “{tab}” ▶", "打开“{tab}”标签页 ▶"),  # ("the The class, batched")
    "interview_no_question": ("There is no interview question {question}: pick one of the cards on the Interview "
                              "questions tab.", "没有编号为 {question} 的面试问题：请在“面试问题”标签页上选一张卡片。"),
    "iq_token_by_token": ("Why does an LLM generate text token by token?", "为什么大语言模型要一个词元一个词元地生成文本？"),
    "ia_token_by_token": (
        "Because of what the model computes. It factors the probability of a text with the chain rule: P(text) is the "
        "product, over each position, of P(that token | every token before it). One forward pass gives one "
        "distribution over the whole vocabulary, for the next position only. We pick a token from it, append it, and "
        "it becomes part of the condition of the next pass. So the text is written one choice at a time, each token "
        "depending on the ones already chosen.",
        "因为模型本身就是这样计算的。它用链式法则分解一段文本的概率：P(文本) 等于每个位置上 P(该词元 | 它之前的所有词元) "
        "的乘积。一次前向计算只给出下一个位置上、覆盖整个词表的一个分布。我们从中选出一个词元，接到文本后面，"
        "它又成为下一次计算的条件。所以文本只能一次一个选择地写出来，每个词元都取决于已经选好的词元。"),
    "iq_autoregressive": ("What is the autoregressive property, and why is it the latency bottleneck?",
                          "什么是自回归性质？为什么它是延迟的瓶颈？"),
    "im_autoregressive": ("“With a KV cache each step is O(1).”", "“有了 KV 缓存，每一步都是 O(1)。”"),
    "ia_autoregressive": (
        "Autoregressive means each output is fed back as the next input: a step needs the token the step before it "
        "chose, so N tokens take N forward passes one after another, and no amount of hardware runs them at once. Each "
        "pass reads every weight of the model, so a step at small batch is bound by memory bandwidth, not arithmetic. "
        "The KV cache saves recomputing the prefix, but a step is not constant time: the new token's attention still "
        "reads all t cached keys and values, so each step grows with the text.",
        "自回归是指每个输出都会作为下一步的输入送回去：每一步都需要上一步选出的词元，所以写 N 个词元要一个接一个地做 N 次"
        "前向计算，再多的硬件也不能让它们同时进行。每次计算都要把模型的每个权重读一遍，所以小批量时一步受内存带宽限制，"
        "而不是算力。KV 缓存省去了重算前缀，但一步并不是常数时间：新词元的注意力仍要读取缓存里全部 t 个键和值，"
        "所以每一步都随文本变长而变慢。"),
    "iq_kv_cache_size": ("How big is a 7B model's KV cache, and how do you compute it?",
                         "一个 7B 模型的 KV 缓存有多大？怎么算？"),
    "im_kv_cache_size": ("“A 7B model's KV cache for {tokens} tokens is about 2 GB.”",
                         "“7B 模型在 {tokens} 个词元时的 KV 缓存大约是 2 GB。”"),
    "ia_kv_cache_size": (
        "Every layer keeps a key and a value vector per KV head for every token, so the bytes are K and V (two) × "
        "layers × KV heads × head dim × tokens × bytes per value. {model} has {layers} layers and {kv_heads} KV heads "
        "of {head_dim}; at {tokens} tokens in {dtype} ({value_bytes} bytes a value) that is {bytes} B, exactly "
        "{size}, for one sequence. It grows linearly with the length and with the batch. {gqa_model} uses "
        "grouped-query attention with {gqa_kv_heads} KV heads, so {gqa_tokens} tokens cost the same {gqa_size}.",
        "每一层都要为每个词元、每个 KV 头存一个键向量和一个值向量，所以字节数是 K 和 V（两份）× 层数 × KV 头数 × 头维度 × "
        "词元数 × 每个值的字节数。{model} 有 {layers} 层、{kv_heads} 个 KV 头，头维度 {head_dim}；{tokens} 个词元、"
        "{dtype}（每个值 {value_bytes} 字节）时是 {bytes} B，正好 {size}，这是一条序列的。它随长度和批大小线性增长。"
        "{gqa_model} 用分组查询注意力，只有 {gqa_kv_heads} 个 KV 头，所以 {gqa_tokens} 个词元也只要同样的 {gqa_size}。"),
    "iq_parallel_training": ("Why is training parallel but generation serial?", "为什么训练可以并行，而生成只能串行？"),
    "ia_parallel_training": (
        "In training the whole text is already known. With teacher forcing each position's input is the true previous "
        "token, and the causal mask lets every position see only what came before it, so one forward pass scores "
        "every position at once and the loss is the mean cross-entropy over them. In generation the next input does "
        "not exist until the model has chosen it, so the steps must run one after another. Same model, same mask: the "
        "logits of the one parallel pass equal those of stepwise cached decoding.",
        "训练时整段文本是已知的。在教师强制下，每个位置的输入都是真实的前一个词元，而因果掩码让每个位置只能看到它之前的内容，"
        "所以一次前向计算就能同时给所有位置打分，损失是这些位置交叉熵的平均值。生成时，下一个输入要等模型选出来才存在，"
        "所以各步只能一个接一个地进行。同一个模型、同一个掩码：那一次并行计算的 logits 与逐步带缓存解码的 logits 相同。"),
    "iq_non_autoregressive": ("Why not generate every token at once (non-autoregressive)?",
                              "为什么不一次生成所有词元（非自回归）？"),
    "ia_non_autoregressive": (
        "A non-autoregressive model such as Mask-Predict fills every position in one parallel pass, then re-masks "
        "and re-predicts the least sure ones for a few rounds. It is fast, but each position is predicted without "
        "knowing what the others chose. When the text has several good forms (the multimodality problem), positions "
        "can mix them, and words get repeated or lost. Left to right, each token is conditioned on the ones already "
        "chosen, so the text stays one consistent choice; that is why the strong models are autoregressive and make "
        "it fast with caching, batching and speculative decoding instead.",
        "非自回归模型（比如 Mask-Predict）用一次并行计算填满所有位置，再把最没把握的几个位置重新遮住、重新预测，迭代几轮。"
        "它快，但每个位置预测时并不知道其他位置选了什么。当一句话有好几种合理说法时（多峰问题），不同位置可能各取一种，"
        "结果出现重复或漏词。从左到右生成时，每个词元都以已经选定的词元为条件，整段文本始终是同一种说法；"
        "所以强的模型仍是自回归的，再靠缓存、批处理和推测解码来提速。"),
    "iq_exposure_bias": ("What is exposure bias, and how is it mitigated?", "什么是暴露偏差？怎么缓解？"),
    "ia_exposure_bias": (
        "In training every input the model sees is a true token; in generation it reads its own choices. So an early "
        "unlikely or wrong token becomes the condition of every later step, and the model may be in text unlike "
        "anything it was trained on: errors can compound. Mitigations: scheduled sampling (feed the model its own "
        "predictions part of the time in training), sequence-level training such as reinforcement learning from "
        "feedback, and at inference more careful decoding (a lower temperature, top-p) or reranking several samples.",
        "训练时模型看到的每个输入都是真实词元；生成时它读的是自己的选择。所以一个早期的低概率或错误的词元会成为之后每一步的条件，"
        "模型可能身处一段和训练时完全不同的文本里：错误会累积。缓解办法：计划采样（训练时有时把模型自己的预测喂回去）、"
        "序列级训练（例如基于反馈的强化学习），以及推理时更谨慎的解码（更低的温度、top-p）或对多个样本重新排序。"),
    "iq_sampling": ("What do temperature, top-k, top-p and min-p do, and in which order?",
                    "温度、top-k、top-p 和 min-p 各做什么？按什么顺序？"),
    "im_sampling": ("“Top-p keeps the top p percent of tokens.”", "“top-p 保留概率最高的前 p% 的词元。”"),
    "ia_sampling": (
        "All four reshape the next-token distribution before the draw. Temperature divides the logits: below one it "
        "sharpens, above one it flattens, and zero means greedy. Top-k keeps the k most likely tokens. Top-p keeps "
        "the smallest set of most likely tokens whose probabilities add up to at least p, so how many it keeps depends "
        "on how sure the model is. Min-p keeps tokens with at least min-p times the top probability. Hugging Face "
        "applies repetition penalty, temperature, top-k, top-p, then min-p, renormalising after each cut; llama.cpp "
        "applies temperature last, and the order can change which tokens survive.",
        "这四个设置都在抽样前改变下一个词元的分布。温度去除 logits：小于一时分布变尖，大于一时变平，为零就是贪心。"
        "top-k 保留最可能的 k 个词元。top-p 保留累积概率至少达到 p 的最小的一组最可能词元，所以保留多少取决于模型有多确定。"
        "min-p 保留概率至少是最高概率 min-p 倍的词元。Hugging Face 的顺序是重复惩罚、温度、top-k、top-p、min-p，"
        "每次截断后重新归一化；llama.cpp 把温度放在最后，顺序不同，留下的词元可能不同。"),
    "iq_speculative": ("How does speculative decoding speed generation up without changing it?",
                       "推测解码怎样在不改变结果的前提下加快生成？"),
    "ia_speculative": (
        "A cheap draft, a small model or a lookup in the prompt, proposes several tokens. The big model checks them "
        "all in one forward pass, which costs about as much as one step, because a step is bound by reading the "
        "weights. It keeps the longest prefix it agrees with, plus one token of its own. Each draft token is accepted "
        "with probability p over q, capped at one, and a rejection is resampled from what is left, so the output has "
        "exactly the big model's distribution; under greedy decoding it is the identical text, in fewer passes.",
        "一个便宜的草稿（小模型，或在提示词里查找）先提出几个词元。大模型用一次前向计算把它们全部检查一遍，"
        "代价和一步差不多，因为一步的瓶颈是读取权重。它保留与自己一致的最长前缀，再加上一个自己的词元。"
        "每个草稿词元以 p 除以 q（最多为一）的概率被接受，被拒绝时从剩下的部分重新抽样，所以输出的分布与大模型完全相同；"
        "在贪心解码下文本一模一样，只是计算次数更少。"),
    "iq_mqa_gqa": ("What are MQA and GQA for?", "MQA 和 GQA 是做什么用的？"),
    "ia_mqa_gqa": (
        "They shrink the KV cache, which at long context limits memory, batch size and decode speed. Multi-head "
        "attention keeps a key and value head for every query head; multi-query attention keeps one shared by all; "
        "grouped-query attention shares each KV head among a group of query heads. {model} has {heads} query heads "
        "and {kv_heads} KV heads: at {tokens} tokens in {dtype} its cache is {gqa_size}, against {mha_size} with a KV "
        "head per query head and {mqa_size} with a single one. Quality stays close to full multi-head attention, and "
        "each decode step reads fewer bytes.",
        "它们用来缩小 KV 缓存：上下文很长时，KV 缓存限制了显存、批大小和解码速度。多头注意力为每个查询头配一个键头和值头；"
        "多查询注意力让所有查询头共用一个；分组查询注意力让一组查询头共用一个 KV 头。{model} 有 {heads} 个查询头、"
        "{kv_heads} 个 KV 头：{tokens} 个词元、{dtype} 时它的缓存是 {gqa_size}，而每个查询头配一个 KV 头时是 {mha_size}，"
        "只有一个 KV 头时是 {mqa_size}。质量与完整的多头注意力接近，每个解码步要读的字节也更少。"),
    "iq_serving": ("How do continuous batching, PagedAttention and PD disaggregation make serving fast?",
                   "连续批处理、PagedAttention 和 PD 分离怎样让推理服务变快？"),
    "ia_serving": (
        "A decode step at small batch is bound by memory bandwidth: every weight is read once per pass, for one "
        "sequence or many, so a bigger batch is almost free. Continuous batching lets sequences join and leave the "
        "running batch at every step, so it stays full. PagedAttention stores each sequence's KV cache in blocks of "
        "{block} tokens through a block table, like pages of virtual memory: little waste, and sequences with a "
        "common prefix share its blocks (prompt caching). Prefill, one compute-bound pass over the prompt, and "
        "decode, many bandwidth-bound steps, want different machines: PD disaggregation runs them apart and sends "
        "the KV cache across.",
        "小批量时，解码一步受内存带宽限制：每次计算都把每个权重读一遍，无论是一条序列还是很多条，所以批大一点几乎不花额外代价。"
        "连续批处理让序列在每一步都可以加入或离开正在运行的批，批总是满的。PagedAttention 通过块表，把每条序列的 KV 缓存"
        "存放在每块 {block} 个词元的块里，就像虚拟内存的页：浪费很少，有相同前缀的序列共用这些块（提示缓存）。"
        "预填充是对提示做一次受算力限制的计算，解码是许多步受带宽限制的计算，两者适合不同的机器："
        "PD 分离把它们放在不同机器上运行，再把 KV 缓存传过去。"),
    "iq_medusa": ("How can a model write several tokens per forward pass without a draft model (Medusa)?",
                  "不用草稿模型，模型怎样在一次前向计算中写出好几个词元（Medusa）？"),
    "ia_medusa": (
        "Medusa adds a few small heads on the model's last hidden state: head k guesses the token k places after the "
        "next one. Their top guesses combine into a tree of candidate continuations, and one forward pass checks the "
        "whole tree with a tree attention mask: each candidate attends to the text and to its own ancestors only. The "
        "longest path matching the model's own greedy tokens is kept, plus one token of the model's, so greedy output "
        "is unchanged. Heads can be trained on the frozen model's own text; here head one's first guess is right "
        "{head_one} of the time.",
        "Medusa 在模型最后一层隐藏状态上加几个小头：第 k 个头猜下一个词元之后第 k 个位置的词元。它们排名靠前的猜测组成一棵候选续写的树，"
        "一次前向计算用树形注意力掩码检查整棵树：每个候选只关注文本和它自己的祖先。保留与模型自己的贪心词元一致的最长路径，"
        "再加上模型自己的一个词元，所以贪心输出不变。这些头可以在冻结的模型自己写的文本上训练；在这里，第一个头的第一个猜测有 "
        "{head_one} 的时候是对的。"),
    "iq_beam_search": ("Does beam search find the best text?", "束搜索能找到最好的文本吗？"),
    "im_beam_search": ("“Beam search finds the best text.”", "“束搜索能找到最好的文本。”"),
    "ia_beam_search": (
        "It keeps the k most probable partial texts at each step, so it finds text of higher model probability than "
        "greedy, within its width; it is not an exact search. And the most probable text is often not the best: it "
        "tends to be bland and repetitive (Holtzman and colleagues, “The Curious Case of Neural Text Degeneration”). "
        "Beams suit tasks with one right answer, such as translation; for open-ended writing people sample, with "
        "temperature and top-p.",
        "它在每一步保留概率最高的 k 个部分文本，所以在它的宽度之内，能找到比贪心解码概率更高的文本；但它不是精确搜索。"
        "而且概率最高的文本往往不是最好的：它常常平淡、重复（Holtzman 等，《The Curious Case of Neural Text Degeneration》）。"
        "束搜索适合只有一个正确答案的任务，比如翻译；开放式写作通常用抽样，配合温度和 top-p。"),
    "iq_subwords": ("Why do models use subword tokens?", "为什么模型用子词作为词元？"),
    "ia_subwords": (
        "A vocabulary of whole words cannot cover names, typos, code or new words, and one of single characters makes "
        "texts long, which costs steps and attention. Subword tokenizers such as byte-level BPE learn frequent pieces: "
        "common words are one token, rare ones split into a few pieces, and any byte string can still be written, so "
        "nothing is out of vocabulary. The price: one Chinese character or emoji can span several byte tokens, and the "
        "model counts and spells in tokens, not letters.",
        "整词词表覆盖不了人名、错别字、代码和新词；只用单个字符又会让文本变得很长，多花步数和注意力。"
        "字节级 BPE 这样的子词分词器学习常见的片段：常用词是一个词元，罕见词拆成几个片段，任何字节串都仍然写得出来，"
        "所以不会有词表外的词。代价是：一个汉字或表情符号可能跨好几个字节词元，而且模型按词元而不是按字母来数数和拼写。"),
    # ---- lessons: prefill against decode, why this token (model/classroom/probes.py, viz/lesson.py) ----
    "lesson_pd_prefill": ("The prefill makes more tokens per second", "预填充每秒处理的词元更多"),
    "lesson_pd_decode": ("The decode step makes more tokens per second", "解码一步每秒做出的词元更多"),
    "lesson_reveal_pd": (
        "Measured just now on this machine, three runs each after a warm-up, every pass a turn at the model's scheduler: a "
        "prefill of {tokens} tokens (the step's text repeated) took **{pms} ms**, **{ptps} tokens per second**; one "
        "decode step at batch 1 took **{dms} ms** for its one token, **{dtps} tokens per second**: about **{ratio} "
        "times** fewer.",
        "刚才在这台机器上测得，各自预热后跑三次，每次计算都在模型的调度器里轮到一次：预填充 {tokens} 个词元（把这一步的文本重复到这么长）"
        "用了 **{pms} 毫秒**，**每秒 {ptps} 个词元**；批大小 1 的一步解码为它唯一的词元用了 **{dms} 毫秒**，**每秒 {dtps} 个词元**："
        "大约少了 **{ratio} 倍**。"),
    "lesson_reveal_pd_prefill": (
        "Every prefill run beat every decode run. Both passes read every weight once; the prefill's read serves all its "
        "tokens, the decode step's one token: it waits on memory, the prefill on arithmetic.",
        "每一次预填充都比每一次解码快。两种计算都把每个权重读一遍；预填充读一次服务它所有的词元，解码一步只服务一个词元："
        "它在等内存，而预填充在等运算。"),
    "lesson_reveal_pd_decode": (
        "Here every decode run beat every prefill run, which a quiet machine does not do: someone else's work slowed "
        "the prefill. Measure again on the Prefill vs decode tab.",
        "这里每一次解码都比每一次预填充快，机器空闲时不会这样：别人的工作拖慢了预填充。请在“预填充与解码”标签页再测一次。"),
    "lesson_reveal_pd_noisy": (
        "**Too noisy to conclude on this machine right now** (the runs overlap): measure again on the Prefill vs "
        "decode tab when it is quieter.",
        "**这台机器此刻太忙，测不出结论**（几次测量互相重叠）：等空闲些在“预填充与解码”标签页再测一次。"),
    "lesson_reveal_attr": (
        "Computed just now: {target}, the step's token, explained by integrated gradients on the input embeddings "
        "({steps} points, completeness gap {gap} logits). {choices}. The token (after the first) that drew the most "
        "attention at this step: {most}.",
        "刚才算出：用输入嵌入上的积分梯度解释这一步的词元 {target}（{steps} 个点，完备性差距 {gap} 个 logit）。{choices}。"
        "这一步（第一个词元之外）得到注意力最多的词元：{most}。"),
    "lesson_reveal_attr_choice": ("{token}: integrated gradient {ig}, attention {att}", "{token}：积分梯度 {ig}，注意力 {att}"),
    "lesson_reveal_attr_absent": ("{token}: not one token of this text", "{token}：不是这段文本里的一个词元"),
    "lesson_reveal_attr_top": ("The largest attribution: {token}.", "归因最大的是：{token}。"),
    # ---- prefill against decode (ui/views/prefill_decode.py) ----
    "tab_prefill_decode": ("Prefill vs decode", "预填充与解码"),
    "explain_prefill_decode": (
        "A request's work comes in two kinds. **Prefill** runs the whole prompt through the model in one pass: every "
        "weight read from memory serves all the prompt's tokens, so a long prompt keeps the arithmetic units busy "
        "(bound by the FLOP rate). **Decode** makes one token per step: every weight is read again for one token of "
        "each sequence, so at a small batch the step waits on memory (bound by bandwidth), and a bigger batch makes "
        "more tokens for nearly the same time. Measure shows it on this model and this machine: tokens per second of "
        "a prefill by prompt length and of the app's own batched decode step by batch; where each pass sits under "
        "this machine's two ceilings (a roofline: FLOPs per byte against FLOPs per second, both ceilings measured "
        "here); and what a long prompt arriving does to a class that is decoding: one long pass that every student's "
        "next token waits for, the app's own chunks with the class's steps between them (as vLLM's chunked prefill "
        "does: Sarathi-Serve), or, as a model, a second machine for prefills that sends the KV cache across (PD "
        "disaggregation: DistServe, Splitwise).",
        "一个请求的工作分两种。**预填充**把整个提示一次送进模型：从内存读出的每个权重服务提示里的所有词元，所以长提示能让运算单元"
        "一直忙着（受算力限制）。**解码**每步做一个词元：为每条序列的一个词元，每个权重都要再读一遍，所以批小时这一步在等内存"
        "（受带宽限制），批大一点，几乎同样的时间就能做出更多词元。“测量”在这个模型、这台机器上展示这一点：预填充按提示长度、"
        "本应用自己的批量解码按批大小的每秒词元数；每次计算在本机两个上限之下的位置（屋顶线：每字节浮点运算数对每秒浮点运算数，"
        "两个上限都在本机测得）；以及全班正在解码时来了一个长提示会怎样：一次长计算，每个学生的下一个词元都要等它；本应用自己的"
        "分块，全班的步骤插在块之间（vLLM 的分块预填充也是这样：Sarathi-Serve）；或者作为模型，用第二台机器专做预填充，再把 KV "
        "缓存传过来（PD 分离：DistServe、Splitwise）。"),
    "btn_pd_measure": ("Measure prefill and decode here", "在本机测量预填充和解码"),
    "pd_roofline_label": ("Roofline", "屋顶线"),
    "pd_timeline_label": ("A long prompt and the class", "长提示与全班"),
    "pd_kept": ("(Measured {ago} s ago and shown again: one measurement per model every {minutes} minutes, so a class "
                "sees one sitting's figures.)", "（{ago} 秒前测得，这里再次显示：每个模型每 {minutes} 分钟只测一次，"
                "全班看到的是同一次测量的数字。）"),
    "explain_pd_engine": (
        "On an engine's model (vllm:..., chosen at the top), the engine's own numbers: the app streams one decode "
        "and sends a long prompt in its middle, and reads vLLM's /metrics before and after. vLLM chunks long prefills "
        "by default: no engine step carries more tokens than its budget (--max-num-batched-tokens), so a longer "
        "prompt is spread over several steps, the running requests' decode tokens riding along. Its histogram of "
        "tokens per step shows that; its prefill time, time to first token and gaps between tokens say what it cost.",
        "在推理引擎的模型上（在顶部选择 vllm:...），看引擎自己的数据：本应用流式运行一次解码，在它中途发出一个长提示，并在前后"
        "读取 vLLM 的 /metrics。vLLM 默认把长预填充分块：引擎的每一步携带的词元不超过它的预算（--max-num-batched-tokens），"
        "所以更长的提示会分到好几步里，正在运行的请求的解码词元搭同一步的车。它的“每步词元数”直方图显示这一点；它的预填充时间、"
        "首词元时间和词元间隔说明代价是多少。"),
    "btn_pd_engine": ("The engine's chunked prefill", "引擎的分块预填充"),
    "explain_pd_limits": (
        "What the figures are, and are not. Times are measured here, now, on a machine others share: each is the "
        "median of a few passes after a warm-up, every pass a turn at the model's scheduler, so the class's steps go "
        "between them (the longest pass is the {n}-token prefill itself). FLOPs and bytes are counted from the "
        "model's shapes, not read from the processor: the bytes are the least a pass must read (every weight once, "
        "the KV cache), so a pass can only be worse than its point says. The split-off row is a model, not a "
        "measurement: a second machine like this one, its prefill as measured here, and a link of {link} GB/s "
        "assumed for the KV cache; real PD systems pay for that second machine and the transfer, and win when "
        "prefills and decodes would otherwise fight for the same steps.",
        "这些数字是什么，不是什么。时间是此刻在这台与别人共用的机器上测得的：每个都是预热后几次计算的中位数，每次计算都在模型的调度器里"
        "轮到一次，所以全班的步骤会插在它们之间（最长的一次就是 {n} 词元的预填充本身）。浮点运算数和字节数是按模型的形状算出来的，"
        "不是从处理器读出来的：字节数是一次计算至少要读的量（每个权重一次，再加 KV 缓存），所以实际只会比图上的点更差。"
        "“拆分”那一行是模型，不是测量：假设有第二台与本机一样的机器，它的预填充用这里测得的时间，KV 缓存走一条假设为 {link} GB/s "
        "的链路；真实的 PD 系统要为第二台机器和传输付出代价，在预填充和解码否则会抢同一步的时候才划算。"),
    # ---- interview: prefill against decode, attribution (ui/views/interview.py) ----
    "iq_prefill_decode": ("Why is prefill compute-bound and decode memory-bound, and what do engines do about it?",
                          "为什么预填充受算力限制、解码受内存限制？推理引擎怎么应对？"),
    "ia_prefill_decode": (
        "A pass reads every weight once. A prefill runs all the prompt's tokens through that one read, hundreds of "
        "FLOPs for every byte, so it waits on arithmetic. A decode step makes one token per sequence, about one "
        "multiply-add per weight it reads, so at a small batch it waits on memory, and batching more sequences into "
        "the step is nearly free until compute binds. A long prefill in the same step as the decodes stalls every "
        "user's next token: engines chunk it so decode steps run between the chunks (Sarathi-Serve; vLLM's default), "
        "or run prefills on other machines and send the KV cache across (PD disaggregation: DistServe, Splitwise).",
        "一次计算把每个权重读一遍。预填充让提示里所有词元共用这一次读取，每个字节对应成百上千次浮点运算，所以它在等运算。解码一步"
        "为每条序列只做一个词元，每读一个权重大约只做一次乘加，所以批小时它在等内存；在算力成为瓶颈之前，往这一步里多放序列几乎"
        "不花额外代价。长预填充和解码放在同一步里，会让每个用户的下一个词元都停下来等：推理引擎把它分块，让解码步插在块之间"
        "（Sarathi-Serve；vLLM 的默认做法），或者把预填充放到别的机器上做，再把 KV 缓存传过来（PD 分离：DistServe、Splitwise）。"),
    "iq_attribution": ("How would you find out why a model produced a token? Do the attention weights tell you?",
                       "怎样弄清模型为什么生成了某个词元？注意力权重能告诉你吗？"),
    "ia_attribution": (
        "Attention says where one layer's heads read from, not what changed the output, and many heads park on the "
        "first token (the attention sink). Attribution asks how the output responds to each input: integrated "
        "gradients average the gradient along a path from a baseline to the input embeddings and satisfy "
        "completeness, the attributions summing to the output's change from the baseline; gradient × input is one "
        "point of that path. Both depend on the baseline and miss interactions between tokens; to test a claim, "
        "change the input or an activation and measure (ablation, activation patching).",
        "注意力说的是某一层的头从哪里读取，而不是什么改变了输出，而且很多头把注意力停在第一个词元上（注意力汇聚点）。归因问的是"
        "输出对每个输入如何响应：积分梯度沿着从基线到输入嵌入的路径平均梯度，并满足完备性，即各归因之和等于输出相对基线的变化；"
        "梯度 × 输入只是这条路径上的一个点。两者都取决于基线，也看不到词元之间的相互作用；要检验一个说法，就去改变输入或某个激活，"
        "再测量（消融、激活修补）。"),
    # ---- why this token: attribution (ui/views/attribution.py) ----
    "tab_attribution": ("Why this token", "为什么是这个词元"),
    "explain_attribution": (
        "Why did the model pick this token? Input attribution answers with a number per earlier token: how much that "
        "token's input pushed the token's logit up (blue) or down (vermillion). **Integrated gradients** (Sundararajan "
        "et al. 2017) walk the input embeddings in a straight line from a baseline (an average token at every position; "
        "the first token stays as it is, below) to the real text, add up the gradient of the logit at points along the "
        "way and multiply by how far each embedding moved. Its check is **completeness**: the attributions sum to the "
        "logit's change from the baseline to the text, up to the error of adding up finitely many points. **Gradient × "
        "input** is one point of that walk, at the text itself: quicker, and it need not sum to anything. Below them, "
        "green: the attention of the same step, the last position reading the text (mean over every layer and head). "
        "Both attributions are computed by Captum, a maintained attribution library for PyTorch.",
        "模型为什么选了这个词元？输入归因给前面每个词元一个数：这个词元的输入把该词元的 logit 推高了多少（蓝色）或压低了多少"
        "（朱红色）。**积分梯度**（Sundararajan 等 2017）让输入嵌入从一个基线（每个位置都是“平均词元”；第一个词元保持不变，见下文）"
        "沿直线走到真实文本，沿途在若干点上把 logit 的梯度加起来，再乘以每个嵌入移动的距离。它的检验是**完备性**："
        "各归因之和等于 logit 从基线到文本的变化，误差来自只用有限个点求和。**梯度 × 输入**只取这条路径上的一个点（文本本身）："
        "更快，但它的和不必等于任何东西。下面绿色的是同一步的注意力：最后一个位置读取文本的方式（所有层、所有头的平均）。"
        "两种归因都由 Captum 计算，它是一个持续维护的 PyTorch 归因库。"),
    "explain_attribution_limits": (
        "What the numbers mean, and what they do not. An attribution says how the logit responds to moving one "
        "token's embedding along this path from this baseline: another baseline gives other numbers, and a token can "
        "matter through what it does together with others. It is not attention: attention says where one layer's "
        "heads read from, attribution what changes the output, and a token can draw much attention and little "
        "attribution (the first token often does: most heads park their attention there, the attention sink; Jain and "
        "Wallace 2019, \"Attention is not Explanation\"). The first token is kept as it is along the path: moving "
        "the attention sink switches it off abruptly and the path becomes too rough to add up, so it gets no "
        "attribution. When the completeness gap is larger than a thousandth of a logit, the path was rough for this "
        "text: more points shrink it. Each forward-and-backward pass through the model takes the scheduler's turn for a few "
        "points only, so the class's steps go between them.",
        "这些数字意味着什么，不意味着什么。归因说的是：沿这条路径、从这个基线出发移动某一个词元的嵌入时，logit 如何响应；"
        "换一个基线就会得到别的数字，而且一个词元也可能通过与其他词元一起的作用而重要。它不是注意力：注意力说的是某一层的头"
        "从哪里读取，归因说的是什么改变了输出；一个词元可以得到很多注意力却只有很小的归因（第一个词元常常如此：大多数头把注意力"
        "停在那里，即注意力汇聚点；Jain 和 Wallace 2019，《Attention is not Explanation》）。第一个词元在路径上保持不变："
        "移动注意力汇聚点会突然把它关掉，路径变得太崎岖而无法准确求和，所以它没有归因。当完备性的差距大于千分之一个 logit 时，"
        "说明对这段文本路径很崎岖：增加点数会让差距变小。每次穿过模型的前向加反向计算只在调度器里占几个点的时间，"
        "所以全班的步骤可以插在它们之间进行。"),
    "attr_position": ("Token to explain (position)", "要解释的词元（位置）"),
    "attr_candidate": ("Whose logit", "解释哪个词元的 logit"),
    "attr_points": ("Points along the path", "路径上的点数"),
    "btn_attr": ("Explain", "解释"),
    "attr_chosen": ("the token the text has there", "文本在这里的词元"),
    "attr_prompt_token": ("prompt", "提示词"),
    "attr_next_token": ("{pos} · the next token (not written yet)", "{pos} · 下一个词元（还没写出）"),
    "attr_result": ("Explained: {target} at position {pos} (probability {prob}, rank {rank}). Its logit is {logit}; from "
                    "the baseline it is {base}, a change of {change}. The integrated gradients sum to {total}: a gap "
                    "of {gap} with {points} points. {passes} passes through the model's scheduler, {ms} ms.",
                    "解释的是：位置 {pos} 的 {target}（概率 {prob}，排名 {rank}）。它的 logit 是 {logit}；从基线出发是 "
                    "{base}，变化了 {change}。积分梯度之和为 {total}：用 {points} 个点，差距为 {gap}。"
                    "共 {passes} 次经过模型的调度器，{ms} 毫秒。"),
    "attr_complete": ("Complete within {tolerance} of a logit.", "在 {tolerance} 个 logit 以内满足完备性。"),
    "attr_incomplete": ("**Not complete within {tolerance} of a logit**: the path is rough for this text; take more "
                        "points.", "**没有在 {tolerance} 个 logit 以内满足完备性**：对这段文本路径很崎岖，请增加点数。"),
}


# ---- what a class leaves with (issue 49): notes, kept charts, my summary, seat names, the class report ----
PAGE.update({
    "notes": ("My notes", "我的笔记"),
    "notes_label": ("Notes (kept in your trace, saved page and summary)", "笔记（会存进你的记录文件、保存的网页和总结）"),
    "notes_placeholder": ("What did you notice at this step?", "这一步你注意到了什么？"),
    "btn_keep": ("Keep this chart", "留下这张图"),
    "keep_kept": ("Kept for your summary ({n} of {limit}).", "已留到你的总结里（{n} / {limit}）。"),
    "keep_no_chart": ("This tab has no chart of your text to keep.", "这个标签页没有关于你的文本的图可以留下。"),
    "explain_summary": (
        "**My summary**: everything this page did, on one page to print or keep: the texts you wrote with their "
        "settings, the steps you forced or went back on, your answers to lesson questions with the right ones and "
        "why, your score, your notes and the charts you kept. Nothing of anyone else's. Open the file, then print it "
        "(or save it as PDF) with its Print button.",
        "**我的总结**：这个页面做过的一切，汇成一页，可以打印或保存：你写的文本和它们的设置、你强制选择或后退的步骤、"
        "你对课程问题的回答以及正确答案和原因、你的得分、你的笔记和你留下的图。不含任何其他人的内容。"
        "打开文件，用其中的“打印”按钮打印（或保存为 PDF）。"),
    "btn_summary": ("My summary", "我的总结"),
    "summary_file": ("Summary (a page to print)", "总结（可打印的网页）"),
    "room_seat_name": ("Your name in the class report (optional)", "你在班级报告里的名字（可不填）"),
    "room_seat_name_hint": ("e.g. Ana, or leave empty", "例如：小明，或留空"),
    "report_box": ("Class report", "班级报告"),
    "explain_report": (
        "The class's answers to each question against the right one, the class's draws against the model's "
        "distribution, the games' results and who joined when. Download it as CSV (one row per question and "
        "answer) and as a page to print. Students appear only under the name they typed; the server keeps nothing "
        "of it once the room closes.",
        "每道题全班的回答与正确答案的对比、全班的抽样与模型分布的对比、游戏结果，以及谁在什么时候加入。"
        "可以下载为 CSV（每道题的每个答案一行）和可打印的网页。学生只以他们自己输入的名字出现；课堂关闭后，服务器不保留任何内容。"),
    "btn_report": ("Make the class report", "生成班级报告"),
    "report_files": ("Class report (CSV and a page to print)", "班级报告（CSV 和可打印的网页）"),
})
# The page a first-time teacher can follow (issue 47): the story's parts as the navigation, Start here, a button that
# says it is running, explained empty states.
NAVIGATION: dict[str, tuple[str, str]] = {
    "nav_where": ("Parts of the page", "页面的各部分"),
    "part_start": ("Start here", "从这里开始"),
    "part_start_about": ("Four ways in: a first lesson, a projector, a class, an interview.",
                         "四个入口：第一课、投影仪、全班、面试。"),
    "part_one_step": ("One step", "一步"),
    "part_one_step_about": (
        "One token written: the text as tokens, the candidates for the next one and what your settings do to them, "
        "attention, the logit lens and the KV cache.",
        "写出一个词元：词元形式的文本、下一个词元的候选以及设置对它们的作用、注意力、逻辑透镜和 KV 缓存。"),
    "part_inside": ("Inside the model", "模型内部"),
    "part_inside_about": (
        "Experiments on the model itself: switch a part off, copy one vector between two runs, score every head, "
        "read one text with two models, and ask why this token (attribution).",
        "直接在模型上做实验：关闭一个部件、在两次运行之间复制一个向量、给每个注意力头打分、用两个模型读同一段文本，并问为什么是这个词元（归因）。"),
    "part_one_at_a_time": ("Why one token at a time", "为什么一次一个词元"),
    "part_one_at_a_time_about": (
        "The chain rule that makes a text's probability, training's one pass against generation's steps, and "
        "branches: each token conditions every later one.",
        "链式法则给出整段文本的概率；训练一次算完，生成却要一步一步来；分支：每个词元都影响之后的所有词元。"),
    "part_beyond": ("Beyond one path", "不止一条路径"),
    "part_beyond_about": (
        "Other ways to choose the tokens: beam search, two samplers raced, answers voted, and constraints that "
        "mask the candidates.",
        "选择词元的其他方法：束搜索、两种采样器比赛、多个答案投票，以及屏蔽候选词元的约束。"),
    "part_engines": ("How engines make it fast", "推理引擎怎样提速"),
    "part_engines_about": (
        "What serving engines do: the KV cache's size for any model, tokenizers, speculative decoding and Medusa "
        "heads, a class in one batch, paged cache blocks, and prefill against decode.",
        "推理服务引擎做了什么：任意模型的 KV 缓存大小、分词器、推测解码和 Medusa 头、全班一批、分页的缓存块，以及预填充对解码。"),
    "part_class": ("The class", "上课"),
    "part_class_about": (
        "Interview questions, guided lessons, a room for the class, and a session saved or loaded.",
        "面试问题、带讲解的课程、全班一起用的课堂，以及会话的保存和载入。"),
    "tab_start": ("Start here", "从这里开始"),
    "start_intro": (
        "Token by Token shows a real language model writing one token at a time: press Next token and watch the "
        "candidates for the next one. Or begin with one of these.",
        "Token by Token 展示一个真实的语言模型如何一次写出一个词元：按“下一个词元”，看下一个词元的候选。也可以从下面任选一个开始。"),
    "start_lesson_head": ("Your first lesson", "第一课"),
    "start_lesson_text": (
        "Lesson 1, one token at a time: a few short steps, each beside its chart, some asking for a guess before "
        "the answer. About ten minutes.",
        "第 1 课“一次一个词元”：几个简短的步骤，每步旁边都有图，有的步骤先让你猜再揭晓答案。大约十分钟。"),
    "start_lesson_btn": ("Start lesson 1", "开始第 1 课"),
    "start_presenter_head": ("At a projector", "在投影仪前"),
    "start_presenter_text": (
        "Presenter mode: large type, the text and its chart on one screen, the settings put away. Keys for a "
        "clicker: → or PageDown next token, ← back, P play, B blank the screen, ? the keys.",
        "演示模式：大字号，文本和图在同一屏，设置收起来。翻页笔的按键：→ 或 PageDown 下一个词元，← 后退，P 播放，"
        "B 黑屏，? 显示按键。"),
    "start_presenter_btn": ("Presenter mode on / off", "打开 / 关闭演示模式"),
    "start_room_head": ("With a class", "和全班一起"),
    "start_room_text": (
        "Open a room: students join from their phones with its code or QR code, see your text and chart, and guess "
        "before you reveal.",
        "开一个课堂：学生用手机输入课堂码或扫二维码加入，看到你的文本和图，并在你揭晓之前先猜。"),
    "start_room_btn": ("Go to the Room tab", "去“课堂”标签页"),
    "start_interview_head": ("Before an interview", "准备面试"),
    "start_interview_text": (
        "Twelve questions ML interviews ask about decoding, each with the common wrong answer, a 30-second answer "
        "to reveal after trying, and the tab that shows it.",
        "机器学习面试常问的十二个解码问题，每个都附有常见的错误答案、先自己试再揭晓的 30 秒答案，以及演示它的标签页。"),
    "start_interview_btn": ("The interview questions", "面试问题"),
    "start_parts_head": ("The story, part by part", "按部分看整个故事"),
    # a pressed button while its answer is awaited (assets/js/busy.js): seconds so far, and of about how many
    "busy_running": ("running · {s} s", "运行中 · {s} 秒"),
    "busy_estimate": ("running · {s} s of about {total} s", "运行中 · {s} 秒，约需 {total} 秒"),
    # Gradio's own words, said in the page's language whatever the browser's (assets/js/own_words.js)
    "gradio_error": ("Error", "错误"),
    "gradio_warning": ("Warning", "警告"),
    "gradio_api": ("Use via API", "通过 API 使用"),
    "gradio_api_mcp": ("Use via API or MCP", "通过 API 或 MCP 使用"),
    "gradio_built": ("Built with Gradio", "使用 Gradio 构建"),
    "gradio_settings": ("Settings", "设置"),
    # Patching's example: two prompts one word apart, in the page's language (Gemma 3 270M, a Chinese page's model:
    # 法国 / 日本 a token each, nine tokens both; after them it gives 巴黎 64 % and 东京 66 %)
    "patch_clean_example": ("The Eiffel Tower is in the city of", "中国的首都是北京。法国的首都是"),
    "patch_corrupted_example": ("The Colosseum is in the city of", "中国的首都是北京。日本的首都是"),
    "patch_answer_example": (" Paris", "巴黎"),
    # the lens's pins before a read: filled then with the model's own candidates (model.inside.lens.own_candidates)
    "lens_pins_placeholder": ("filled with the model's own candidates when you read the lens",
                              "读取透镜时，自动填入模型自己的候选词元"),
    # explained empty states: what a tab shows once its button is pressed
    "lens_empty": (
        "Nothing is drawn until you press **Read every layer**: the model then reads your text once, every layer's "
        "output is read as if it were the last, and the chart appears here (a second or two).",
        "按下**读取每一层**之前，这里什么也不画：按下后，模型把你的文本读一遍，把每一层的输出都当作最后一层来读，图就出现在这里（一两秒）。"),
    "training_empty": (
        "Press the button above to run your whole text through the model in one parallel pass, as training sees it, "
        "and set it against the steps that wrote it: the chart appears here.",
        "按上面的按钮，把整段文本按训练时的方式一次并行算完，再和写出它的那些步骤对比：图会出现在这里。"),
    "explain_session": (
        "**Export** saves this session (its prompt, settings and every step) as a JSON trace, to load again or share. "
        "**Export as a web page** saves it as one page that replays it in any browser, offline. **Import** loads a "
        "trace and plays it back one Next token at a time.",
        "**导出**把这个会话（提示词、设置和每一步）存成一个 JSON 记录文件，可以再载入或分享。**导出为网页**把它存成一个网页，"
        "任何浏览器都能离线回放。**导入**载入一个记录文件，按“下一个词元”一步一步回放。"),
    # Self-consistency on a real question (lesson 12's)
    "sc_needs_question": ("A vote needs a question with one short answer; the page's first text is a sentence to continue.",
                          "投票需要一个只有简短答案的问题；页面一开始的文本只是一句待续写的话。"),
    "sc_use_question": ("Ask it a question", "换成一个问题"),
    "sc_question": ("Q: Tom has three apples and buys two more. How many apples does he have now?\nA:",
                    "问：小明有三个苹果，又买了两个。他现在一共有几个苹果？\n答："),
    # the calculator on the model this server runs, in another type than it runs in (the KV cache tab measures that)
    "calc_here": (
        "This server runs {model} in {running} ({running_bytes} B per value): {running_per_token} B per token, as the "
        "KV cache tab measures; the calculator's {dtype} is what a GPU server would usually hold.",
        "本服务器用 {running}（每个值 {running_bytes} B）运行 {model}：每个词元 {running_per_token} B，和“KV 缓存”标签页测得的一样；"
        "计算器里的 {dtype} 是 GPU 服务器上常用的精度。"),
}
PAGE.update(NAVIGATION)


def t(key: str, lang: str = "en", **fmt) -> str:
    """A page, figure or refusal text for `key` in `lang` (as a request sent it: anything but "zh" is English),
    its {placeholders} filled from `fmt`."""
    table = next((words for words in (PAGE, WORDS, MESSAGES) if key in words), PAGE)
    return lookup(table, key, lang_of(lang), fmt, "PAGE in ui/strings.py")


class Refusal(SessionError):
    """A request the page itself refuses (a value it cannot read), with a key of PAGE and its parameters."""

    def __init__(self, key: str, **params):
        if key not in PAGE:
            raise KeyError(f"no page message {key!r}: add it to PAGE in ui/strings.py")
        self.key, self.params = key, params
        ValueError.__init__(self, self.text("en"))

    def text(self, lang: str = "en") -> str:
        """In `lang`; a parameter named *_key is itself a key, said in `lang` too (a setting's label)."""
        params = {(k[:-4] if k.endswith("_key") else k): (t(v, lang) if k.endswith("_key") else v)
                  for k, v in self.params.items()}
        return t(self.key, lang, **params)
