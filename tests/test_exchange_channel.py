"""The exchange's channel from the engine pump to the responder (``gateway/exchange.py``):
bounded, ended by the sender, closed by the receiver, taken with a timeout."""

from __future__ import annotations

import asyncio

import pytest

from deepseek_recipe.backends import BackendChunk, BackendError
from deepseek_recipe.gateway.exchange import Channel, ChannelClosed, Signal


def test_items_arrive_in_order_then_the_end() -> None:
    async def main() -> None:
        channel = Channel(4)
        first, second = BackendChunk(token_ids=[1]), BackendError("closed", "gone")
        await channel.put(first)
        await channel.put(second)
        channel.end()
        assert await channel.get(1.0) is first
        assert channel.take() is second
        assert channel.take() is None
        assert await channel.get(1.0) is Signal.ENDED

    asyncio.run(main())


def test_a_full_channel_holds_the_sender_until_there_is_room() -> None:
    async def main() -> None:
        channel = Channel(2)
        chunks = [BackendChunk(token_ids=[i]) for i in range(5)]

        async def pump() -> None:
            for chunk in chunks:
                await channel.put(chunk)
            channel.end()

        task = asyncio.create_task(pump())
        await asyncio.sleep(0.05)
        assert not task.done()  # two waiting, the third held
        got = []
        while (item := await channel.get(1.0)) is not Signal.ENDED:
            got.append(item)
        assert got == chunks
        await task

    asyncio.run(main())


def test_waiting_times_out_and_a_late_item_still_arrives() -> None:
    async def main() -> None:
        channel = Channel(2)
        assert await channel.get(0.02) is Signal.TIMED_OUT
        assert await channel.get(0) is Signal.TIMED_OUT
        chunk = BackendChunk(token_ids=[7])
        asyncio.get_running_loop().call_later(0.02, lambda: asyncio.ensure_future(channel.put(chunk)))
        assert await channel.get(5.0) is chunk

    asyncio.run(main())


def test_a_receiver_that_leaves_fails_the_sender() -> None:
    async def main() -> None:
        channel = Channel(1)
        await channel.put(BackendChunk(token_ids=[1]))
        held = asyncio.create_task(channel.put(BackendChunk(token_ids=[2])))
        await asyncio.sleep(0.01)
        channel.close()
        with pytest.raises(ChannelClosed):
            await held
        with pytest.raises(ChannelClosed):
            await channel.put(BackendChunk(token_ids=[3]))

    asyncio.run(main())
