"""Fewer wake-ups of Streamlit's event loop, per rerun and when idle: what `python -m deploy.run` (make run,
make serve, the benchmarks) changes in Streamlit 1.67's transport and in uvicorn's main loop.

Streamlit hands every message of a rerun from the script thread to the event loop with its own
`loop.call_soon_threadsafe`: a write to the loop's wake-up socket per message (about 57 for a toggle of the
Attention page), each waking the loop for that one message, which then asks for a flush with another
`call_soon_threadsafe`, again a write, though it already runs on the loop.

- `batch_script_events`: a session's events wait in a queue, and the loop is woken once for all those that
  arrive before it runs them, in the order they came. No event waits longer than before: the first one of a
  batch wakes the loop at once.
- `direct_flush_request`: the request to flush, made on the loop itself, sets the loop's event directly.
- `quiet_server_tick`: uvicorn's main loop ticks once a second, not ten times, and stops at once when asked.

Measured (toy model, 16 tokens, 40 scaling toggles, two A/B rounds): the first two, 0.047 → 0.044 s of
server CPU per toggle; the tick took an idle server from 2.2 to 0.4–0.6 ms of CPU a second. Holding back
small messages to wake the loop still less often saved nothing more (A/B) and was not kept. Each function
returns False, and changes nothing, when Streamlit or uvicorn no longer has what it changes.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque


class EventBatch:
    """Callbacks for one event loop, run there in order, with one wake-up for all that wait."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._waiting: deque = deque()
        self._scheduled = False

    def add(self, callback) -> None:
        """Queue ``callback``; wake the loop only if no run of the queue is already due. Thread-safe."""
        with self._lock:
            self._waiting.append(callback)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._run)
        except RuntimeError:  # the loop is closed (shutdown): Streamlit drops the event too
            with self._lock:
                self._waiting.clear()
                self._scheduled = False
            if not self.loop.is_closed():
                raise

    def _run(self) -> None:
        with self._lock:
            batch = list(self._waiting)
            self._waiting.clear()
        try:
            for callback in batch:
                try:
                    callback()
                except Exception as error:  # as asyncio reports a failing callback, and runs the next one
                    self.loop.call_exception_handler(dict(message="Exception in a Streamlit event callback", exception=error))
        finally:  # whatever happened, the queue is run again or marked as not due
            with self._lock:
                if self._waiting:  # added while these ran: their turn comes after the loop's other callbacks
                    self.loop.call_soon(self._run)
                else:
                    self._scheduled = False


def batch_script_events() -> bool:
    """Route `AppSession._call_soon_on_event_loop` (every script-runner event) through an `EventBatch`."""
    from streamlit.runtime.app_session import AppSession

    original = getattr(AppSession, "_call_soon_on_event_loop", None)
    if original is None or getattr(original, "batched", False):
        return original is not None

    def call_soon_batched(self, callback) -> None:
        batch = self.__dict__.get("_event_batch")
        if batch is None or batch.loop is not self._event_loop:
            batch = self.__dict__["_event_batch"] = EventBatch(self._event_loop)
        batch.add(callback)

    call_soon_batched.batched = True
    AppSession._call_soon_on_event_loop = call_soon_batched
    return True


def direct_flush_request() -> bool:
    """`Runtime._enqueued_some_message` sets the flush event directly when called on the loop itself."""
    from streamlit.runtime.runtime import Runtime

    original = getattr(Runtime, "_enqueued_some_message", None)
    if original is None or getattr(original, "direct", False) or not hasattr(Runtime, "_get_async_objs"):
        return original is not None

    def enqueued_some_message(self) -> None:
        objects = self._get_async_objs()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is objects.eventloop:
            objects.need_send_data.set()
        else:
            objects.eventloop.call_soon_threadsafe(objects.need_send_data.set)

    enqueued_some_message.direct = True
    Runtime._enqueued_some_message = enqueued_some_message
    return True


SERVER_TICK_S = 1.0  # uvicorn's own: 0.1 s


def quiet_server_tick() -> bool:
    """uvicorn's main loop wakes every 0.1 s, to update its date header once a second and to see a request to
    stop: 1.9 ms of CPU a second on an idle server here (2.2 ms/s in all, measured over 3 × 10 s with a page
    open), about 4 ms of every toggle's share in the benchmark. It now wakes every SERVER_TICK_S (the date
    header still changes every second) and at once when Streamlit's `UvicornServer.stop` asks it to stop (a
    stop asked otherwise, by setting `should_exit`, is seen at the next tick)."""
    import uvicorn.server
    from streamlit.web.server.starlette.starlette_server import UvicornServer

    server_class = uvicorn.server.Server
    if getattr(server_class.main_loop, "quiet", False):
        return True
    if not hasattr(server_class, "on_tick") or not hasattr(UvicornServer, "stop"):
        return False

    async def main_loop(self) -> None:
        self.wakeups_stop, self.wakeups_loop = asyncio.Event(), asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # a multiple of ten: `on_tick` updates the date header every tick
            try:
                await asyncio.wait_for(self.wakeups_stop.wait(), SERVER_TICK_S)
            except TimeoutError:
                pass
            should_exit = await self.on_tick(counter)

    original_stop = UvicornServer.stop

    def stop(self) -> None:
        original_stop(self)
        server = getattr(self, "_server", None)
        loop, event = getattr(server, "wakeups_loop", None), getattr(server, "wakeups_stop", None)
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    main_loop.quiet = True
    server_class.main_loop = main_loop
    UvicornServer.stop = stop
    return True
