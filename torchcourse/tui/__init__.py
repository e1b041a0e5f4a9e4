"""The Textual app of torchcourse. The only package that imports textual; it never imports torch."""
