"""attn.ChatTemplate and Model.apply_chat_template: the runtime's chat
templates from Python (no model needed: a template folder made here, and the
real Qwen3 template of scripts/test-data.sh's data when it is there)."""

import json
import os

import pytest

import attn

# A template that shows what it is given: messages with tool calls and
# reasoning, tools, the generation prompt and a kwarg.
SOURCE = (
    "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }}({{ c.function.arguments | tojson }})]"
    "{% endfor %}{% if m.reasoning_content %}({{ m.reasoning_content }}){% endif %}{% endfor %}"
    "{% if tools %}{% for t in tools %}{{ t | tojson }}{% endfor %}{% endif %}"
    "{% if add_generation_prompt %}<assistant>{% if enable_thinking is false %}"
    "<nothink>{% endif %}{% endif %}"
)

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture()
def folder(tmp_path):
    config = {"chat_template": SOURCE, "bos_token": "<s>", "eos_token": "</s>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp_path


def test_messages_tools_and_kwargs(folder):
    chat = attn.ChatTemplate(folder)
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning_content": "use the tool",
         "tool_calls": [{"type": "function",
                         "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "21 \u00b0C"},
    ]
    assert chat.apply_chat_template(messages) == (
        '<s><user>Weather in Paris?<assistant>None[get_weather({"city": "Paris"})]'
        "(use the tool)<tool>21 \u00b0C")
    assert chat.apply_chat_template(messages[:1], tools=TOOLS, add_generation_prompt=True,
                                    enable_thinking=False) == (
        "<s><user>Weather in Paris?" + json.dumps(TOOLS[0], ensure_ascii=False)
        + "<assistant><nothink>")
    assert chat.apply_chat_template(messages[:1], add_generation_prompt=True,
                                    enable_thinking=True) == "<s><user>Weather in Paris?<assistant>"


def test_from_string_and_errors(folder):
    chat = attn.ChatTemplate.from_string(
        "{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}"
        "{{ eos_token }}", eos_token="</s>")
    assert chat.apply_chat_template([{"role": "user", "content": "x"}]) == "</s>"
    with pytest.raises(attn.Error, match="raise_exception: user first"):
        chat.apply_chat_template([{"role": "system", "content": "x"}])
    with pytest.raises(attn.Error, match=r"messages\[0\].role: expected a string, got a number"):
        chat.apply_chat_template([{"role": 1, "content": "x"}])
    with pytest.raises(attn.Error, match="not JSON"):
        chat.apply_chat_template([{"role": "user", "content": object()}])
    with pytest.raises(attn.Error, match="tokenizer_config.json"):
        attn.ChatTemplate(folder / "missing")
    with pytest.raises(attn.Error, match="unsupported filter 'wordwrap'"):
        attn.ChatTemplate.from_string("{{ x | wordwrap }}")


def test_qwen3_template_from_the_test_data():
    data = os.environ.get("ATTN_TEST_DATA", "")
    qwen3 = os.path.join(data, "tokenizers", "qwen3")
    reference = os.path.join(data, "chat", "reference.json")
    if not data or not os.path.exists(reference):
        pytest.skip("no test data (scripts/test-data.sh; ATTN_TEST_DATA)")
    chat = attn.ChatTemplate(qwen3)
    cases = [c for c in json.load(open(reference, encoding="utf-8"))["cases"]
             if c["template"] == "tokenizers/qwen3" and "text" in c]
    assert len(cases) > 10
    for case in cases:
        options = dict(case["options"])
        assert chat.apply_chat_template(case["messages"], **options) == case["text"]
