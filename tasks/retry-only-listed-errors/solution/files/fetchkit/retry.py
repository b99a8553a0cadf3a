import functools
import logging
import time

log = logging.getLogger(__name__)


def retry(attempts=3, on=(Exception,), delay=0.0, backoff=1.0, sleep=time.sleep):
    """Retry the decorated function when it raises one of the exception
    types in `on`.

    attempts counts every call, the first included. Between calls it waits
    delay seconds, then delay*backoff, and so on. `sleep` is used for the
    waits (tests pass a fake).
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    if isinstance(on, type):
        on = (on,)
    on = tuple(on)

    def decorate(fn):
        name = getattr(fn, "__qualname__", repr(fn))

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            wait = delay
            for attempt in range(1, attempts + 1):
                try:
                    return fn(*args, **kwargs)
                except on as exc:
                    if attempt == attempts:
                        raise
                    log.warning("%s failed (%s), attempt %d/%d", name, exc, attempt, attempts)
                    if wait > 0:
                        sleep(wait)
                    wait *= backoff

        return wrapper

    return decorate
