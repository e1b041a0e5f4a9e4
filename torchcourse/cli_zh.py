"""argparse in Chinese: the usage line, the help headings and every usage error.

argparse builds those texts through ``gettext`` (its module-level ``_`` and ``ngettext``);
:func:`install` points them at this table, so ``torchcourse --help`` and a mistyped command
speak the same one language as the rest of the command line. Unknown texts pass through.
"""

from __future__ import annotations

import argparse

ZH = {
    "usage: ": "用法：",
    "positional arguments": "参数",
    "options": "选项",
    "optional arguments": "选项",
    "show this help message and exit": "显示这份帮助后退出",
    "show program's version number and exit": "显示版本号后退出",
    "%(prog)s: error: %(message)s\n": "%(prog)s：错误：%(message)s\n",
    "the following arguments are required: %s": "缺少必需的参数：%s",
    "unrecognized arguments: %s": "不认识的参数：%s",
    "invalid choice: %(value)r (choose from %(choices)s)": "没有 %(value)r 这一项（可选：%(choices)s）",
    "one of the arguments %s is required": "必须给出其中一个参数：%s",
    "argument %(argument_name)s: %(message)s": "参数 %(argument_name)s：%(message)s",
    "not allowed with argument %s": "不能和参数 %s 一起用",
    "ignored explicit argument %r": "忽略了多给的值 %r",
    "expected one argument": "需要一个值",
    "expected at most one argument": "最多一个值",
    "expected at least one argument": "至少需要一个值",
    "invalid %(type)s value: %(value)r": "不是有效的 %(type)s 值：%(value)r",
    "ambiguous option: %(option)s could match %(matches)s": "选项 %(option)s 有歧义，可能是：%(matches)s",
    "unexpected option string: %s": "意外的选项：%s",
}
ZH_N = {
    ("expected %s argument", "expected %s arguments"): "需要 %s 个值",
}


def _gettext(text: str) -> str:
    return ZH.get(text, text)


def _ngettext(singular: str, plural: str, n: int) -> str:
    return ZH_N.get((singular, plural), singular if n == 1 else plural)


def install() -> None:
    argparse._ = _gettext  # type: ignore[attr-defined]
    argparse.ngettext = _ngettext  # type: ignore[attr-defined]
