"""expect: fail
slip: calls the engine's scheduler.
reason: uses_reference
"""
from mlacourse.engine.scheduler import schedule_step as _engine_step


def schedule_step(running, waiting, token_budget, max_running=None):
    return _engine_step(running, waiting, token_budget, max_running)
