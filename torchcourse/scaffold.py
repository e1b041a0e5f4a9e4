"""``torchcourse new DIR``: a small course that passes ``check`` and ``verify`` as it is.

One chapter with every part of the anatomy (🎯 promise, sections with ⭐/⚠️ callouts, a snippet
with its output, one with ``raises=``, a ``norun`` one, a 🔗 section, the ✅ checkpoint heading, the
final break point, the ⚡ recap, the link to the next chapter), its checkpoint with one question of
each kind, an appendix with one lookup row, and a route. ``preload = []``: it needs no torch.
The outputs were written by ``torchcourse verify --accept``; tests/test_author_mode.py checks
that ``check`` and ``verify`` pass on a fresh scaffold.
"""

from __future__ import annotations

import sys
from pathlib import Path

FILES: dict[str, str] = {}
FILES['course.toml'] = '# 课程清单：章节按阅读顺序排列，附录，路线。格式见 torchcourse 的 content/README.md。\nid = "my-course"          # 课程的身份：进度、测验记录和代码块缓存都记在它名下（字母、数字、. - _）\ntitle = "我的课程"\nchars_per_minute = 170\ncheckpoints = "checkpoints"\npreload = []              # 预热运行器先导入的模块；讲 PyTorch 的课写 ["torch"]，讲 NumPy 的写 ["numpy"]\n\n[[chapters]]\nid = "01"                 # 章节 id：只用 ASCII 字母和数字（链接 [文字](01#锚点) 靠它）\nfile = "01-first.md"\ntitle = "第一章"\npromise = "看懂一段代码块怎样运行、怎样和预期输出对比"\ntarget_minutes = 4\ncheckpoint = "01.toml"\n\n[[chapters]]\nid = "A"\nfile = "A-error-lookup.md"\ntitle = "附录：报错反查"\npromise = "按报错原文找到讲它的那一节"\nkind = "appendix"\ntarget_minutes = 1\n\n[[routes]]\nid = "A"\nname = "从头读到尾"\naudience = "第一次读这门课的人"\nchapters = ["01", "A"]\n'
FILES['01-first.md'] = '# 第一章\n\n🎯 看懂一段代码块怎样运行、怎样和预期输出对比：读完这一章，你会写代码块、让 verify --accept 填上输出，再用检查点测验收尾。\n\n## 代码块和它的输出 {#snippets}\n\n每个 `python` 代码块都带一个 id，读者按 ▶ 就在一个新的空目录里真的运行它，再和下面的预期输出对比。\n\n```python {#sum}\nnumbers = [3, 1, 2]\nprint(sorted(numbers), sum(numbers))\n```\n\n```output\n[1, 2, 3] 6\n```\n\n> ⭐ 预期输出不要手写：运行 `torchcourse verify --accept`，它把真实输出写进来。\n\n<!-- break: 代码块讲完 -->\n\n## 会报错的代码块 {#errors}\n\n一段本来就该报错的代码，在围栏里写 `raises=异常类名`，verify 才把这个报错当作预期。\n\n```python {#bad-int raises=ValueError}\nint("三")\n```\n\n```output\nTraceback (most recent call last):\n  ...\nValueError: invalid literal for int() with base 10: \'三\'\n```\n\n只给读者看、从不运行的代码写 `norun`：\n\n```python {#shown norun}\nwhile True:\n    pass\n```\n\n> ⚠️ 每段代码都单独运行：前一个代码块定义的名字、写下的文件，在下一个代码块里都不存在。\n\n## 🔗 和后面的关系 {#links}\n\n报错原文收在[附录](A)里，读者可以按报错反查到[这一节](#errors)。\n\n## ✅ 检查点 {#checkpoint}\n\n按 k 做这一章的检查点测验。\n\n<!-- break -->\n\n## ⚡ 走神救援 {#recap}\n\n代码块带 id，输出由 verify --accept 写入；会报错的写 raises=；只给人看的写 norun。\n\n下一章：[附录：报错反查](A)。\n'
FILES['A-error-lookup.md'] = '# 附录：报错反查\n\n🎯 按报错原文找到讲它的那一节。\n\n## 类型转换 {#conversion}\n\n| 报错原文 | 原因 | 先查 | 讲解 |\n|---|---|---|---|\n| `ValueError: invalid literal for int() with base 10` | 字符串不是十进制数字 | 打印要转换的字符串 | [01 §会报错的代码块](01#errors) |\n\n<!-- break -->\n'
FILES['checkpoints/01.toml'] = 'chapter = "01"\n\n[[questions]]\nid = "who-writes-output"\nkind = "single"\nprompt = "预期输出块应该怎么来？"\nchoices = ["照着自己记得的样子手写进去", "运行 verify --accept 写入", "从别的教程里整段复制过来"]\nanswer = 1\nexplain = "verify --accept 真的运行代码块，把真实输出写进章节文件。"\nsection = "snippets"\n\n[[questions]]\nid = "fence-attrs"\nkind = "multi"\nprompt = "下面哪些是代码块围栏里能写的属性？"\nchoices = ["raises=ValueError", "norun", "colour=red"]\nanswer = [0, 1]\nexplain = "raises= 声明预期的异常，norun 表示只给人看；colour= 不是属性。"\nsection = "errors"\n\n[[questions]]\nid = "raises-name"\nkind = "fill"\nprompt = "一段本来就该报错的代码块，围栏里要写哪个属性（等号前的部分）？"\naccept = ["raises", "raises="]\nexplain = "写 raises=异常类名，例如 raises=ValueError。"\nsection = "errors"\n\n[[questions]]\nid = "predict-sum"\nkind = "predict"\nsnippet = "sum"\nprompt = "这段代码打印什么？"\nchoices = ["[3, 1, 2] 6", "[1, 2, 3] 6", "[1, 2, 3] 5"]\nanswer = 1\nexplain = "sorted 返回排好序的新列表，sum 求和得 6。"\nsection = "snippets"\n\n[[questions]]\nid = "why-alone"\nkind = "open"\nprompt = "为什么前一个代码块定义的名字，在下一个代码块里用不了？"\nreference = "每段代码都单独写进一个空文件、在新的空目录里用新进程运行。"\nexplain = "这样每段代码的输出只取决于它自己，读者单独运行也得到同样的结果。"\nsection = "errors"\n'


def _course_id(target: Path) -> str:
    from torchcourse.course.loader import COURSE_ID_RE

    import secrets

    # the folder's name alone collides (every author's "course" folder would share one learner's
    # progress): a short random suffix makes the id this course's own
    name = target.resolve().name[:50]
    base = name if COURSE_ID_RE.match(name) else "course"
    return f"{base}-{secrets.token_hex(3)}"


def guide_path() -> Path:
    """The authoring guide (content/README.md) as installed: in the wheel or the source tree."""
    from torchcourse import paths

    return paths.shipped_content_dir() / "README.md"


def create(target: Path, course_id: str | None = None) -> list[Path]:
    """Write the scaffold into ``target`` (which must not exist, or be an empty folder); return
    the files written. Raises FileExistsError when ``target`` holds anything."""
    target = Path(target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(str(target))
    cid = course_id or _course_id(target)
    written = []
    for name, text in FILES.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "course.toml":
            text = text.replace('id = "my-course"', f'id = "{cid}"', 1)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _id_of(course_toml: Path) -> str:
    import re

    m = re.search(r'^id = "([^"]*)"', course_toml.read_text(encoding="utf-8"), re.M)
    return m.group(1) if m else ""


def cmd_new(args) -> int:
    from torchcourse.course.loader import COURSE_ID_RE

    target = Path(args.dir)
    if args.id is not None and not COURSE_ID_RE.match(args.id):
        print(f"torchcourse new：课程 id 只能用字母、数字和 . - _（最多 64 个，字母或数字开头），收到的是 {args.id!r}", file=sys.stderr)
        return 2
    try:
        written = create(target, args.id)
    except FileExistsError:
        print(f"torchcourse new：{target} 已经存在而且不是空目录；换一个新目录名，已有的文件一个也没动。", file=sys.stderr)
        return 2
    except OSError as exc:
        from torchcourse.paths import os_reason

        print(f"torchcourse new：写不进 {target}：{os_reason(exc)}", file=sys.stderr)
        return 2
    print(f"📁 在 {target} 建好了一门新课程：")
    for path in written:
        print(f"   {path.relative_to(target)}")
    print("下一步：")
    print(f"   torchcourse --content {target} check            # 检查内容（现在是 0 处问题）")
    print(f"   torchcourse --content {target} verify           # 运行每个代码块，和预期输出对比")
    print(f"   torchcourse --content {target} verify --accept  # 改了代码块以后，用真实输出改写预期输出")
    print(f"   torchcourse --content {target}                  # 像读者一样打开它")
    print(f"课程 id 是 {written and _id_of(written[0])!s}：学习进度记在它名下，以后别随手改（要改见指南的 aliases）。")
    print(f"写法见作者指南：{guide_path()}")
    return 0
