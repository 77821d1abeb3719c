"""How kernels get compiled: the ``kernel`` decorator and the library compiled ahead of time (``aot``), its
build, the manifest of what each built-in scene compiles, the parallel first-run compile and its
progress line."""
