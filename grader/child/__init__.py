"""The part of the judge that runs the learner's code, and nothing else: a small package the
judge mounts, alone, in the attempt's sandbox (grader/jail.py) and runs there as a script
(``__main__.py``). It imports nothing of the course.

  protocol   the statuses of a call, plain data both ways (encode/decode), bounded texts
  guards     what graded code may not read, write, start, signal or import (a courtesy in
             the sandbox, where the course is not there at all)
  inputs     arrays frozen by the operating system; other arguments compared after each call
  resources  the process's limits, set on itself before the attempt's file is read; the
             libraries it loads first
  run        import the attempt, run its cases, send the records (``main``, ``serve_forked``
             for a notebook's kernel, ``run_in_process`` for the browser)
  kernel     a problem whose answer must be a kernel's: the judge launches it itself
             (imported only for such problems)
"""
from .guards import COURSE_PACKAGES, WATCH, DataRecord, ReferenceUseError, die_with_parent
from .inputs import changed_inputs, first_change, freeze_arrays, snapshot, snapshots
from .protocol import _REAL_EXIT, OUTPUT_KEEP, SOURCE_CAP, TEXT_KEEP, RunStatus, cut, decode, encode
from .resources import attempt_imports, set_memory_headroom, set_rlimits, warm_up_blas
from .run import (import_failure, learner_traceback, load_module, main, run_case, run_cases,
                  run_in_process, serve_forked)

__all__ = ["RunStatus", "cut", "encode", "decode", "OUTPUT_KEEP", "TEXT_KEEP", "SOURCE_CAP", "COURSE_PACKAGES",
           "WATCH", "DataRecord", "ReferenceUseError", "die_with_parent", "snapshot", "snapshots",
           "first_change", "changed_inputs", "freeze_arrays", "set_memory_headroom", "set_rlimits",
           "attempt_imports", "warm_up_blas", "load_module", "learner_traceback", "import_failure",
           "run_case", "run_cases", "run_in_process", "serve_forked", "main"]
