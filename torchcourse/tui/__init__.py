"""The Textual app of torchcourse. The only package that imports textual; it never imports torch."""

from torchcourse.tui.cjkwrap import install as _install_cjk_wrap

_install_cjk_wrap()  # Chinese lines break between characters, not only at spaces
