"""deploy/wakeups.py: the launcher wakes Streamlit's event loop once per batch of a rerun's messages, runs
every message in the order it came, and loses none, also when a callback fails or the loop has closed."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from deploy import wakeups


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts its wake-ups from other threads."""

    wakes = 0

    def call_soon_threadsafe(self, callback, *args, **kwargs):
        self.wakes += 1
        return super().call_soon_threadsafe(callback, *args, **kwargs)


def run_until(loop: asyncio.AbstractEventLoop, done) -> None:
    async def waiting():
        for _ in range(500):
            if done():
                return
            await asyncio.sleep(0.002)
        raise AssertionError("the callbacks did not all run")

    loop.run_until_complete(waiting())


@pytest.fixture
def loop():
    loop = CountingLoop()
    yield loop
    if not loop.is_closed():
        loop.close()


def test_callbacks_from_another_thread_run_in_order_with_one_wake_up_for_those_waiting(loop):
    batch, ran = wakeups.EventBatch(loop), []
    adder = threading.Thread(target=lambda: [batch.add(lambda i=i: ran.append(i)) for i in range(57)])
    adder.start()
    adder.join()
    assert loop.wakes == 1  # the loop was not running: all 57 waited for one wake-up
    run_until(loop, lambda: len(ran) == 57)
    assert ran == list(range(57))
    batch.add(lambda: ran.append("next"))  # the queue ran empty: the next one wakes the loop again
    assert loop.wakes == 2
    run_until(loop, lambda: ran[-1] == "next")


def test_a_callback_added_while_a_batch_runs_runs_after_it(loop):
    batch, ran = wakeups.EventBatch(loop), []
    batch.add(lambda: (ran.append("first"), batch.add(lambda: ran.append("added by first"))))
    batch.add(lambda: ran.append("second"))
    run_until(loop, lambda: len(ran) == 3)
    assert ran == ["first", "second", "added by first"]
    assert loop.wakes == 1  # the one added on the loop needed no wake-up


def test_a_failing_callback_is_reported_and_the_next_one_still_runs(loop):
    batch, ran, reported = wakeups.EventBatch(loop), [], []
    loop.set_exception_handler(lambda _, context: reported.append(context["exception"]))
    batch.add(lambda: 1 / 0)
    batch.add(lambda: ran.append("after"))
    run_until(loop, lambda: ran == ["after"])
    assert [type(error) for error in reported] == [ZeroDivisionError]


def test_an_event_for_a_closed_loop_is_dropped_as_streamlit_drops_it(loop):
    batch = wakeups.EventBatch(loop)
    loop.close()
    batch.add(lambda: None)  # no RuntimeError at shutdown
    batch.add(lambda: None)  # nor later: the dropped batch did not leave the queue marked as due


def test_the_launcher_routes_a_sessions_events_and_flush_requests_through_the_batch(monkeypatch, loop):
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.runtime import Runtime

    monkeypatch.setattr(AppSession, "_call_soon_on_event_loop", AppSession._call_soon_on_event_loop)
    monkeypatch.setattr(Runtime, "_enqueued_some_message", Runtime._enqueued_some_message)
    assert wakeups.batch_script_events() and wakeups.direct_flush_request()
    assert wakeups.batch_script_events(), "a second call changes nothing and still says it is on"

    session, ran = SimpleNamespace(_event_loop=loop), []
    for i in range(10):
        AppSession._call_soon_on_event_loop(session, lambda i=i: ran.append(i))
    assert loop.wakes == 1
    run_until(loop, lambda: len(ran) == 10)
    assert ran == list(range(10))

    flush = asyncio.Event()
    runtime = SimpleNamespace(_get_async_objs=lambda: SimpleNamespace(eventloop=loop, need_send_data=flush))

    async def on_the_loop():
        Runtime._enqueued_some_message(runtime)
        return flush.is_set()  # set at once, without a wake-up

    assert loop.run_until_complete(on_the_loop()) is True
    assert loop.wakes == 1
    flush.clear()
    threading.Thread(target=Runtime._enqueued_some_message, args=(runtime,)).start()  # from another thread: a wake-up
    run_until(loop, flush.is_set)
    assert loop.wakes == 2


def test_the_server_ticks_once_a_second_and_stops_at_once_when_streamlit_asks(monkeypatch):
    """uvicorn's main loop, as the launcher changes it: over 2.5 s it ticks about three times (uvicorn's own
    loop: 25), each tick updates the date header, and Streamlit's `UvicornServer.stop` ends it at once
    though the tick is made 30 s long here."""
    import uvicorn
    from streamlit.web.server.starlette.starlette_server import UvicornServer

    from conftest import free_port

    monkeypatch.setattr(uvicorn.Server, "main_loop", uvicorn.Server.main_loop)
    monkeypatch.setattr(UvicornServer, "stop", UvicornServer.stop)
    assert wakeups.quiet_server_tick()

    async def app(scope, receive, send):  # never asked anything
        pass

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), lifespan="off", log_level="warning"))
    ticks = []
    on_tick = server.on_tick

    async def counted(counter):
        ticks.append(counter)
        return await on_tick(counter)

    server.on_tick = counted
    wrapper = UvicornServer.__new__(UvicornServer)  # Streamlit's wrapper around this server, as it stops it
    wrapper._server = server

    async def serve_then_stop():
        serving = asyncio.create_task(server.serve())
        await asyncio.sleep(2.5)
        tick_count, date_headers = len(ticks), {dict(server.server_state.default_headers)[b"date"]}
        monkeypatch.setattr(wakeups, "SERVER_TICK_S", 30.0)
        await asyncio.sleep(1.2)  # the tick under way ends; the next one is 30 s long
        date_headers.add(dict(server.server_state.default_headers)[b"date"])
        started = asyncio.get_running_loop().time()
        wrapper.stop()
        await asyncio.wait_for(serving, 10)
        return tick_count, date_headers, asyncio.get_running_loop().time() - started

    tick_count, date_headers, stop_s = asyncio.run(serve_then_stop())
    assert 2 <= tick_count <= 4, ticks
    assert all(counter % 10 == 0 for counter in ticks), "every tick refreshes the date header"
    assert len(date_headers) == 2, "the date header still changes"
    assert stop_s < 5, f"the stop waited for the 30 s tick ({stop_s:.1f} s)"
