"""The simulated Files and Batch endpoints, driven by the real openai client over loopback."""

import asyncio
import json

import openai
import pytest

from hce.sim import SimJudge
from hce.sim.batch import BatchSettings
from hce.errors import HceError

PROMPT = "Assign a single holistic total score. Transcript:\nPatient: I walk sometimes.\n\nTotal Score (5-20):"


def request(custom_id, model="gpt-4o", url="/v1/chat/completions"):
    body = {"model": model, "temperature": 0, "messages": [{"role": "user", "content": PROMPT}]}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def drive(server, lines, polls_expected=None):
    """Upload, create, poll to the end; returns (batch states seen, output lines, error lines, the client's list)."""

    async def go():
        async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0) as client:
            uploaded = await client.files.create(file=("in.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch")
            assert (await client.files.retrieve(uploaded.id)).bytes == uploaded.bytes
            batch = await client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                completion_window="24h", metadata={"hce_part": "1/1"})
            seen = [(batch.status, None)]
            while batch.status not in ("completed", "failed"):
                batch = await client.batches.retrieve(batch.id)
                seen.append((batch.status, batch.request_counts.completed if batch.request_counts else None))
            files = []
            for file_id in (batch.output_file_id, batch.error_file_id):
                text = (await client.files.content(file_id)).content.decode() if file_id else ""
                files.append([json.loads(x) for x in text.splitlines()])
            listed = [b.id async for b in client.batches.list(limit=1)]  # one page at a time
            return batch, seen, files, listed

    return asyncio.run(go())


def test_a_batch_moves_through_its_statuses_and_answers_in_file_order(serve):
    judge = SimJudge(seed=0, batch=BatchSettings(polls=2))
    server = serve(judge)
    batch, seen, (output, errors), listed = drive(server, [request(f"r{i}") for i in range(4)])
    # validating on creation; validated on the 1st retrieval; half done on the 2nd; completed on the 3rd
    assert seen == [("validating", None), ("in_progress", 0), ("in_progress", 2), ("completed", 4)]
    assert batch.request_counts.total == 4 and batch.metadata == {"hce_part": "1/1"} and errors == []
    assert [x["custom_id"] for x in output] == ["r0", "r1", "r2", "r3"]
    reply = output[0]["response"]
    # The same reply as online (the SimJudge docstring's example: greedy, this item, "12").
    assert reply["status_code"] == 200 and reply["body"]["choices"][0]["message"]["content"] == "12"
    batch2, *_ , listed = drive(server, [request("s0")])
    assert listed == [batch2.id, batch.id]  # newest first, paged with after=


def test_failures_go_to_the_error_file(serve):
    server = serve(SimJudge(seed=0, batch=BatchSettings(polls=0, failure_rate=0.5)))
    batch, _, (output, errors), _ = drive(server, [request(f"r{i}") for i in range(20)])
    assert batch.request_counts.failed == len(errors) > 0 and batch.request_counts.completed == len(output) > 0
    assert {e["response"]["status_code"] for e in errors} == {500}
    assert sorted(x["custom_id"] for x in output + errors) == sorted(f"r{i}" for i in range(20))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([request("a"), request("a")], "custom_id 'a' repeats"),
        ([request("a"), request("b", model="o3")], "one batch may use one model"),
        ([request("a", url="/v1/embeddings")], "every request must be POST /v1/chat/completions"),
        (["{not json"], "not valid JSON"),
    ],
)
def test_a_bad_input_file_fails_validation_with_reasons(serve, lines, message):
    batch, seen, files, _ = drive(serve(SimJudge(seed=0)), lines)
    assert seen[-1] == ("failed", 0) and files == [[], []]
    assert any(message in e.message for e in batch.errors.data)


def test_unknown_ids_and_bad_settings():
    judge = SimJudge(seed=0)
    assert judge.respond("GET", "/v1/batches/batch_nope", None).status == 404
    assert judge.respond("GET", "/v1/files/file-nope/content", None).status == 404
    assert judge.respond("POST", "/v1/batches", {"input_file_id": "file-nope"}).status == 400
    with pytest.raises(HceError, match="failure_rate"):
        BatchSettings(failure_rate=2)
    with pytest.raises(HceError, match="cancel_share"):
        BatchSettings(cancel_share=-0.1)


def test_a_cancelled_batch_stops_with_its_finished_share_and_lists_the_rest(serve):
    server = serve(SimJudge(seed=0, batch=BatchSettings(polls=4, cancel_polls=1, cancel_share=0.25)))
    lines = [request(f"r{i}") for i in range(8)]

    async def go():
        async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0) as client:
            uploaded = await client.files.create(file=("in.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch")
            batch = await client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                completion_window="24h")
            seen = [(await client.batches.retrieve(batch.id)).status for _ in range(3)]  # validated; 2, then 4 of 8 done
            cancelling = await client.batches.cancel(batch.id)
            seen += [(await client.batches.retrieve(batch.id)).status for _ in range(2)]
            ended = await client.batches.retrieve(batch.id)
            files = [[json.loads(x) for x in (await client.files.content(f)).content.decode().splitlines()]
                     for f in (ended.output_file_id, ended.error_file_id)]
            with pytest.raises(openai.ConflictError) as refused:
                await client.batches.cancel(batch.id)
            return cancelling, seen, ended, files, refused.value

    cancelling, seen, ended, (output, errors), refused = asyncio.run(go())
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    assert seen == ["in_progress", "in_progress", "in_progress", "cancelling", "cancelled"]
    # 4 answered before the cancel (2 of 4 polls of 8 requests), more than cancel_share 0.25 of 8
    assert [x["custom_id"] for x in output] == ["r0", "r1", "r2", "r3"] and ended.cancelled_at is not None
    assert [x["custom_id"] for x in errors] == ["r4", "r5", "r6", "r7"]
    assert all(x["response"] is None and x["error"]["code"] == "batch_cancelled" for x in errors)
    assert (ended.request_counts.total, ended.request_counts.completed, ended.request_counts.failed) == (8, 4, 0)
    # OpenAI's refusal: HTTP 409, invalid_request_error, naming the status
    assert refused.status_code == 409 and refused.body["type"] == "invalid_request_error"
    assert refused.body["message"] == "Cannot cancel a batch with status 'cancelled'."


def submitted(judge, lines):
    """The path of a batch created over ``lines`` on the judge directly (no HTTP)."""
    data = ("\n".join(lines) + "\n").encode()
    record = judge.respond("POST", "/v1/files", {"file": ("in.jsonl", data), "purpose": "batch"}).body
    body = {"input_file_id": record["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    return f"/v1/batches/{judge.respond('POST', '/v1/batches', body).body['id']}"


def test_cancel_share_answers_more_than_were_done():
    judge = SimJudge(seed=0, batch=BatchSettings(polls=2, cancel_polls=0, cancel_share=0.75))
    target = submitted(judge, [request(f"r{i}") for i in range(4)])
    assert judge.respond("GET", target, None).body["request_counts"]["completed"] == 0
    assert judge.respond("POST", target + "/cancel", None).body["status"] == "cancelling"
    assert judge.respond("POST", target + "/cancel", None).body["status"] == "cancelling"  # asked twice: as it is
    ended = judge.respond("GET", target, None).body
    assert (ended["status"], ended["request_counts"]["completed"]) == ("cancelled", 3)  # 0.75 of 4


def test_a_batch_cancelled_while_validating_ends_with_no_files():
    judge = SimJudge(seed=0, batch=BatchSettings(cancel_polls=0))
    target = submitted(judge, [request("a")])
    judge.respond("POST", target + "/cancel", None)
    ended = judge.respond("GET", target, None).body
    assert (ended["status"], ended["output_file_id"], ended["error_file_id"]) == ("cancelled", None, None)
    assert judge.respond("POST", "/v1/batches/batch_nope/cancel", None).status == 404
