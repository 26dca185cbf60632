"""Every word the page itself shows (labels, explanations, the status line, its own refusals), in English and
Simplified Chinese side by side, and the one function that translates anything the user can see.

The figures' words are in viz/i18n.py, the engine's refusals in model/errors.py: say() reads all three.
"""
from __future__ import annotations

from model.errors import MESSAGES, SessionError
from viz.i18n import LANGS, WORDS

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
    "calc_mha": ("MHA ({heads} KV heads)", "MHA（{heads} 个 KV 头）"),
    "calc_gqa": ("GQA ({kv_heads} KV heads)", "GQA（{kv_heads} 个 KV 头）"),
    "calc_mqa": ("MQA (1 KV head)", "MQA（1 个 KV 头）"),

    "timing_empty": (
        "Press “Measure now” to time one step with and without the cache at several lengths of this text.",
        "点击“现在测量”，在这段文本的几个长度上分别测一步有缓存和无缓存的耗时。",
    ),

    "trace_file": ("Trace file (JSON)", "记录文件（JSON）"),

    "shortcuts": (
        "Keys: → or N = next token, ← or B = back, P = play / pause.",
        "快捷键：→ 或 N = 下一个词元，← 或 B = 后退，P = 播放 / 暂停。",
    ),

}


def t(key: str, lang: str = "en", **fmt) -> str:
    """A page, figure or refusal text for `key` in `lang`, its {placeholders} filled from `fmt`."""
    pair = PAGE.get(key) or WORDS.get(key) or MESSAGES.get(key)
    if pair is None:
        raise KeyError(f"no string {key!r}: add it to PAGE in ui/strings.py, in English and Chinese")
    text = pair[1] if lang == "zh" else pair[0]
    return text.format(**fmt) if fmt else text


def lang_of(value) -> str:
    """The page's language from a request value: 'zh' or 'en' (anything else)."""
    return value if value in LANGS else "en"


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


def say(err: SessionError, lang: str) -> str:
    """A refusal in the page's language."""
    return err.text(lang)
