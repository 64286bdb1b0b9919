"""The false-positive corpus as data: ordinary tasks, each with the calls a correct model makes and its answer.

A :class:`Scenario` holds each model turn once: a tuple of :class:`Call` (several: a parallel reply) and
then the answer. :mod:`tests.corpus.script` turns it into each protocol's replies. A call marked
``refused`` is one the loop must refuse (a value outside the tool's enum): the refusal must quote that value,
the tool must not run, and the model's next, corrected call runs. Everything else must run exactly as the
model asked, and the answer must be accepted as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call the model makes."""

    tool: str
    args: dict[str, Any]
    refused: str | None = None
    """The value the refusal must quote, for a call the loop must refuse (``None``: the call must run)."""


def call(tool: str, **args: Any) -> Call:
    """A call that must run exactly as written."""
    return Call(tool, args)


def bad(tool: str, value: str, **args: Any) -> Call:
    """A call whose ``value`` is outside the tool's enum: refused with the value quoted, never run."""
    return Call(tool, args, refused=value)


@dataclass(frozen=True)
class Scenario:
    """A task, the tools it is given, the model's turns, and its answer."""

    id: str
    task: str
    tools: tuple[str, ...]
    turns: tuple[tuple[Call, ...], ...]
    answer: str
    observed: tuple[str, ...] = field(default=())
    """Texts the run's tool results must contain (both readings of a live value ...)."""


def scenario(id: str, task: str, tools: str, *turns: Call | list[Call], answer: str,  # noqa: A002
             observed: tuple[str, ...] = ()) -> Scenario:
    """A scenario; each turn is one call or a list of calls made in one reply."""
    return Scenario(id, task, tuple(tools.split()), tuple(tuple(t) if isinstance(t, list) else (t,) for t in turns),
                    answer, observed)


SCENARIOS: list[Scenario] = [
    # --- an enum argument outside the enum: refused with the value quoted, then the corrected call runs ----
    scenario("enum-transfer-overnight", "Send 250 EUR to account ACC-1042, overnight if possible.", "transfer get_balance",
             bad("transfer", "overnight", account="ACC-1042", amount=250.0, speed="overnight"),
             call("transfer", account="ACC-1042", amount=250.0, speed="express"),
             answer="Sent 250.00 EUR to ACC-1042 by express transfer (same day); overnight is not offered."),
    scenario("enum-restart-rolling", "Do a rolling restart of billing-api.", "restart_service check_disk",
             bad("restart_service", "rolling", name="billing-api", mode="rolling"),
             call("restart_service", name="billing-api", mode="graceful"),
             answer="billing-api was restarted gracefully; a rolling mode is not available, graceful is the closest."),
    scenario("enum-ticket-urgent", "Open an urgent ticket: the login page returns 500s.", "create_ticket search",
             bad("create_ticket", "urgent", title="Login page returns 500s", priority="urgent"),
             call("create_ticket", title="Login page returns 500s", priority="high"),
             answer="Opened TICKET-318 with high priority (the highest the tracker has)."),
    scenario("enum-refund-chf", "Refund 40 CHF on order ORD-77.", "refund convert_currency",
             bad("refund", "CHF", order_id="ORD-77", amount=40.0, currency="CHF"),
             call("convert_currency", amount=40.0, from_currency="CHF", to_currency="EUR"),
             call("refund", order_id="ORD-77", amount=42.4, currency="EUR"),
             answer="Refunded 42.4 EUR (40 CHF at today's rate) on ORD-77."),
    scenario("enum-sensor-kelvin", "What does sensor boiler-2 read, in kelvin?", "read_sensor convert_units",
             bad("read_sensor", "kelvin", sensor_id="boiler-2", unit="kelvin"),
             call("read_sensor", sensor_id="boiler-2", unit="celsius"),
             answer="boiler-2 reads 21.5 °C, which is 294.65 K.", observed=("21.5 celsius",)),
    scenario("enum-deploy-prod", "Deploy web 2.4.1 to prod.", "deploy job_status",
             bad("deploy", "prod", service="web", version="2.4.1", environment="prod"),
             call("deploy", service="web", version="2.4.1", environment="production"),
             answer="web 2.4.1 is deployed to production."),
    scenario("enum-format-typescript", "Format this TypeScript: const x=(a:number)=>a*2", "format_code",
             bad("format_code", "typescript", code="const x=(a:number)=>a*2", language="typescript"),
             call("format_code", code="const x=(a:number)=>a*2", language="javascript"),
             answer="The formatter has no TypeScript mode; formatted as JavaScript."),
    scenario("enum-metrics-30m", "What was the p95 latency over the last 30 minutes?", "query_metrics",
             bad("query_metrics", "30m", metric="p95_latency", window="30m"),
             call("query_metrics", metric="p95_latency", window="1h"),
             answer="p95 latency was 212 ms over the last hour (the shortest window available)."),

    # --- a currency code argument runs as given ---------------------------------------------------------
    scenario("currency-pay-gbp", "Pay invoice INV-2031: 1200 GBP.", "pay_invoice get_balance",
             call("pay_invoice", invoice_id="INV-2031", amount=1200.0, currency="GBP"),
             answer="Paid INV-2031: 1200 GBP."),
    scenario("currency-pay-jpy", "Pay invoice INV-88 for ¥150000.", "pay_invoice",
             call("pay_invoice", invoice_id="INV-88", amount=150000, currency="JPY"),
             answer="Paid INV-88: 150000 JPY."),
    scenario("currency-convert-eur-usd", "How much is 99.99 EUR in dollars?", "convert_currency",
             call("convert_currency", amount=99.99, from_currency="EUR", to_currency="USD"),
             answer="99.99 EUR is about 105.99 USD."),
    scenario("currency-rate-then-pay-eur", "Check the USD to EUR rate, then pay invoice INV-5 (500 EUR).",
             "get_exchange_rate pay_invoice",
             call("get_exchange_rate", base="USD", quote="EUR"),
             call("pay_invoice", invoice_id="INV-5", amount=500.0, currency="EUR"),
             answer="The rate is 1 USD = 0.92 EUR; INV-5 is paid: 500 EUR."),
    scenario("currency-balances-parallel", "What are the balances of savings in GBP and checking in EUR?",
             "get_balance",
             [call("get_balance", account="savings", currency="GBP"), call("get_balance", account="checking", currency="EUR")],
             answer="savings: 1520.40 GBP; checking: 1520.40 EUR."),

    # --- a live value read twice runs twice and returns both readings ----------------------------------
    scenario("live-sensor-after-wait", "Read sensor boiler-2, wait a minute, and read it again: is it warming up?",
             "read_sensor sleep",
             call("read_sensor", sensor_id="boiler-2"), call("sleep", seconds=60), call("read_sensor", sensor_id="boiler-2"),
             answer="Yes: it went from 21.5 to 22.75 °C in a minute.", observed=("21.5 celsius", "22.75 celsius")),
    scenario("live-job-status-after-wait", "Is build-913 done yet? If it is still running, wait 30 s and check again.",
             "job_status sleep",
             call("job_status", job_id="build-913"), call("sleep", seconds=30), call("job_status", job_id="build-913"),
             answer="build-913 has succeeded (it was still running 30 s earlier).",
             observed=("running (step 2 of 5)", "succeeded")),
    scenario("live-queue-drain", "Check the emails queue, give it 10 seconds, and tell me whether it is draining.",
             "queue_length sleep",
             call("queue_length", queue="emails"), call("sleep", seconds=10), call("queue_length", queue="emails"),
             answer="It is draining: 41 messages, then 7 ten seconds later.", observed=("41 messages", "7 messages")),
    scenario("live-clock-around-tests", "Time how long the API tests take: note the time, run tests/api, note the time.",
             "current_time run_tests",
             call("current_time"), call("run_tests", path="tests/api"), call("current_time"),
             answer="The API tests took 42 seconds (10:00:00 to 10:00:42); 48 passed.",
             observed=("10:00:00", "10:00:42")),
    scenario("live-stock-twice", "Get ACME's price, wait 5 seconds, get it again: did it move?",
             "get_stock_price sleep",
             call("get_stock_price", symbol="ACME"), call("sleep", seconds=5), call("get_stock_price", symbol="ACME"),
             answer="It moved up 0.15, from 101.2 to 101.35 USD.", observed=("101.2 USD", "101.35 USD")),
    scenario("live-sensor-back-to-back", "Take two readings of sensor lab-1, one right after the other.",
             "read_sensor", call("read_sensor", sensor_id="lab-1"), call("read_sensor", sensor_id="lab-1"),
             answer="lab-1 read 21.5 and then 22.75 °C.", observed=("21.5 celsius", "22.75 celsius")),
    scenario("live-job-poll-until-done", "Poll job etl-7 every 20 s until it finishes.", "job_status sleep",
             call("job_status", job_id="etl-7"), call("sleep", seconds=20), call("job_status", job_id="etl-7"),
             answer="etl-7 succeeded on the second check.", observed=("running (step 2 of 5)", "succeeded")),
    scenario("live-queue-zh", "查一下 orders 队列的长度，等 10 秒再查一次，队列在减少吗？", "queue_length sleep",
             call("queue_length", queue="orders"), call("sleep", seconds=10), call("queue_length", queue="orders"),
             answer="在减少：从 41 条降到 7 条。", observed=("41 messages", "7 messages")),

    # --- a call shown as JSON, not run: the answer is the JSON text ------------------------------------
    scenario("shown-delete-user-json", "Don't run anything, only show me the `delete_user` call as JSON for user 42.",
             "delete_user get_order",
             answer='{"name": "delete_user", "arguments": {"user_id": 42}}'),
    scenario("shown-delete-user-tool-args", "Without executing it, write out the delete_user call for user 7 "
             "(reason: requested by user) as a JSON object.", "delete_user",
             answer='{"tool": "delete_user", "args": {"user_id": 7, "reason": "requested by user"}}'),
    scenario("shown-send-email-fenced", "Draft, but do not send, the send_email call to bob@example.com about "
             "Friday's outage; show it as a JSON code block.", "send_email",
             answer='```json\n{"name": "send_email", "arguments": {"to": "bob@example.com", "subject": "Friday outage", '
                    '"body": "The API was down from 14:00 to 14:20."}}\n```'),
    scenario("shown-get-order-json", "Just show me the get_order call you would make for order 55, as JSON; "
             "don't call it.", "get_order", answer='{"name": "get_order", "arguments": {"order_id": "55"}}'),
    scenario("shown-transfer-zh", "不要执行，只把给 ACC-9 转 100 的 transfer 调用写成 JSON 给我看。", "transfer",
             answer='{"name": "transfer", "arguments": {"account": "ACC-9", "amount": 100}}'),
    scenario("shown-refund-after-lookup", "Look up order ORD-3, then show me (don't run) the refund call for its "
             "full total as JSON.", "get_order refund",
             call("get_order", order_id="ORD-3"),
             answer='{"name": "refund", "arguments": {"order_id": "ORD-3", "amount": 84.0, "currency": "EUR"}}'),

    # --- a parallel reply that repeats an earlier call and adds two new ones: all three run ------------
    scenario("parallel-repeat-stock", "Get ACME's price; then ACME again with GLOBEX and INITECH for a snapshot.",
             "get_stock_price",
             call("get_stock_price", symbol="ACME"),
             [call("get_stock_price", symbol="ACME"), call("get_stock_price", symbol="GLOBEX"),
              call("get_stock_price", symbol="INITECH")],
             answer="Snapshot: ACME 101.35, GLOBEX 101.2, INITECH 101.2 USD.", observed=("ACME: 101.35 USD",)),
    scenario("parallel-repeat-jobs", "Check job a; then check a, b and c together.", "job_status",
             call("job_status", job_id="a"),
             [call("job_status", job_id="a"), call("job_status", job_id="b"), call("job_status", job_id="c")],
             answer="a succeeded; b and c are running.", observed=("job a: succeeded",)),
    scenario("parallel-repeat-sensors", "Read s1, then read s1, s2 and s3 at once.", "read_sensor",
             call("read_sensor", sensor_id="s1"),
             [call("read_sensor", sensor_id="s1"), call("read_sensor", sensor_id="s2"), call("read_sensor", sensor_id="s3")],
             answer="s1 is now 22.75; s2 and s3 read 21.5 °C.", observed=("s1: 22.75 celsius",)),
    scenario("parallel-repeat-orders", "Show ORD-1; then compare it with ORD-2 and ORD-3.", "get_order",
             call("get_order", order_id="ORD-1"),
             [call("get_order", order_id="ORD-1"), call("get_order", order_id="ORD-2"), call("get_order", order_id="ORD-3")],
             answer="All three orders have 2 items, total 84.00 EUR, and have shipped."),
    scenario("parallel-rates", "What is 1 USD in EUR, GBP and JPY?", "get_exchange_rate",
             [call("get_exchange_rate", base="USD", quote="EUR"), call("get_exchange_rate", base="USD", quote="GBP"),
              call("get_exchange_rate", base="USD", quote="JPY")],
             answer="1 USD = 0.92 EUR = 0.79 GBP = 151.3 JPY."),
    scenario("parallel-two-emails", "Email alice@example.com and bob@example.com that the release is out.",
             "send_email",
             [call("send_email", to="alice@example.com", subject="Release", body="The release is out."),
              call("send_email", to="bob@example.com", subject="Release", body="The release is out.")],
             answer="Both emails are sent."),
    scenario("parallel-population-zh", "北京和上海的常住人口相差多少？", "get_population",
             [call("get_population", city="北京"), call("get_population", city="上海")],
             answer="上海比北京多 302 万人（2487 万 − 2185 万）。"),

    # --- answers in ordinary words that sound like the loop's own ---------------------------------------
    scenario("answer-needs-qa-signoff", "Run the tests and tell me if we can release.", "run_tests",
             call("run_tests", path="tests"),
             answer="All 48 tests pass, but the task still needs sign-off from QA before the release."),
    scenario("answer-needs-security", "Can we deploy the payments service today?", "job_status",
             call("job_status", job_id="security-review-12"),
             answer="Not yet: the task still needs approval from the security team (review 12 is running)."),
    scenario("answer-still-needed-reviewer", "What is missing before PR 412 can merge?", "search",
             call("search", query="PR 412 review"),
             answer="Still needed: one more reviewer for PR #412; call the on-call lead if it is urgent."),
    scenario("answer-mentions-calculator", "What is an 18% tip on $42.50?", "word_count",
             answer="The tip is $7.65 (18% of $42.50); the calculator app on your phone gives the same."),
    scenario("answer-json-result", "Summarise the test run as JSON with total and failed.", "run_tests",
             call("run_tests", path="tests"), answer='{"total": 48, "failed": 0}'),
    scenario("answer-still-needs-q3", "Can the forecast be finished today?", "get",
             call("get", key="forecast.inputs"),
             answer="No. The task still needs one more input: the Q3 numbers from finance."),
    scenario("answer-describes-tools", "What can you do with the tools you have?", "translate_text word_count",
             answer="I can translate text into the target language (an English language name), and tell how many "
                    "words the text has."),
    scenario("answer-next-step", "Is the nightly export done?", "job_status",
             call("job_status", job_id="nightly-export"),
             answer="Not yet, it is at step 2 of 5. Next step: check again in ten minutes."),

    # --- arguments that look like placeholders, templates or variables ---------------------------------
    scenario("arg-br", "Replace every <br> in 'line one<br>line two' with a newline.", "replace_text",
             call("replace_text", text="line one<br>line two", find="<br>", replace="\n"),
             answer="line one\nline two"),
    scenario("arg-div", "In index.html, change every <div> to <section>.", "replace_in_file",
             call("replace_in_file", path="index.html", old="<div>", new="<section>"),
             answer="Replaced 2 occurrences of <div> with <section> in index.html."),
    scenario("arg-brace-name", "Fill the template 'Hello {name}!' for Ada.", "render_template",
             call("render_template", template="Hello {name}!", name="Ada"), answer="Hello Ada!"),
    scenario("arg-dollar-home", "Rewrite 'cd ${HOME}/src' with /home/ada instead of ${HOME}.", "replace_text",
             call("replace_text", text="cd ${HOME}/src", find="${HOME}", replace="/home/ada"),
             answer="cd /home/ada/src"),
    scenario("arg-todo", "Find the TODO comments in src.", "grep_code",
             call("grep_code", pattern="TODO", path="src"), answer="Two TODOs: src/app/client.py:3 and src/app/jobs.py:41."),
    scenario("arg-todo-note", "Save a note titled TODO with the body <p>call Bob</p>.", "save_note",
             call("save_note", title="TODO", body="<p>call Bob</p>"), answer="Saved the TODO note."),
    scenario("arg-angle-name", "Replace the placeholder <name> in 'Dear <name>,' with Ada.", "replace_text",
             call("replace_text", text="Dear <name>,", find="<name>", replace="Ada"), answer="Dear Ada,"),

    # --- a value the tool's description gives as an example ---------------------------------------------
    scenario("example-parquet", "Export the orders table as parquet.", "export_table",
             call("export_table", table="orders", format="parquet"), answer="Exported to /exports/orders.parquet."),
    scenario("example-parquet-implied", "Export the events table in a columnar format for Spark.", "export_table",
             call("export_table", table="events", format="parquet"), answer="Exported to /exports/events.parquet."),
    scenario("example-search-vacation", "How many vacation days do I get?", "search",
             call("search", query="vacation policy"), answer="See the vacation policy page, updated 2026-01-12."),
    scenario("example-search-expense", "How do I get reimbursed for a taxi ride?", "search",
             call("search", query="expense report"), answer="File an expense report; the wiki page explains how."),
    scenario("example-kilometers", "How many miles is a 42.195 km marathon?", "convert_units",
             call("convert_units", value=42.195, from_unit="kilometers", to_unit="miles"),
             answer="A marathon is 26.219 miles."),
    scenario("example-cron-monday", "Schedule the sales report for every Monday morning at nine.", "schedule_report",
             call("schedule_report", report="sales", cron="0 9 * * 1"), answer="The sales report runs every Monday at 09:00."),
    scenario("example-oncall-assignee", "Open a ticket for the flaky CI job and assign it to the CI on-call engineer.",
             "get_oncall create_ticket",
             call("get_oncall", team="ci"), call("create_ticket", title="Flaky CI job", assignee="alice"),
             answer="Opened TICKET-318 and assigned it to alice."),

    # --- arithmetic, without a calculator or with an ordinary one ---------------------------------------
    scenario("math-minus-twice", "What is 12 − 5 − 5?", "word_count", answer="12 − 5 − 5 = 2."),
    scenario("math-times-larger", "How many times larger is Jupiter's mass than Earth's?", "lookup_fact",
             call("lookup_fact", query="mass of Jupiter"), call("lookup_fact", query="mass of Earth"),
             answer="Jupiter's mass is about 318 times larger than Earth's."),
    scenario("math-pizza", "A pizza divided into 8 slices: 3 people eat 2 slices each. How many are left?",
             "word_count", answer="2 slices are left."),
    scenario("math-seconds-in-3-days", "How many seconds are in 3 days?", "evaluate",
             call("evaluate", expression="3*24*60*60"), answer="3 days are 259200 seconds."),
    scenario("math-tcp-udp", "What is the difference between TCP and UDP?", "search",
             answer="TCP is connection-oriented and delivers bytes reliably and in order; UDP sends independent "
                    "datagrams with no delivery or ordering guarantee, so it is lighter and faster."),
    scenario("math-percent-growth", "Revenue went from 950 to 1200. What is the growth in percent?", "evaluate",
             call("evaluate", expression="(1200-950)/950*100"), answer="Revenue grew by about 26.3%."),
    scenario("math-divide-zh", "1200 除以 16 是多少？", "word_count", answer="1200 除以 16 等于 75。"),
    scenario("math-wan-zh", "一套房 350 万元，首付三成是多少？", "word_count", answer="首付是 105 万元。"),
    scenario("math-days-diff-zh", "2024年3月1日和2024年5月1日相差多少天？", "days_between",
             call("days_between", start="2024-03-01", end="2024-05-01"), answer="相差 61 天。"),

    # --- dates and units ----------------------------------------------------------------------------------
    scenario("date-add-30", "What date is 30 days after 2026-01-30?", "add_days",
             call("add_days", date="2026-01-30", days=30), answer="2026-03-01."),
    scenario("date-christmas-weekday", "What day of the week is Christmas 2026?", "weekday",
             call("weekday", date="2026-12-25"), answer="Christmas 2026 is a Friday."),
    scenario("date-days-between", "How many days from 2026-01-01 to 2026-03-01?", "days_between",
             call("days_between", start="2026-01-01", end="2026-03-01"), answer="59 days."),
    scenario("date-tokyo-time", "What time is it in Tokyo?", "current_time",
             call("current_time", timezone="Asia/Tokyo"), answer="It is 10:00 in Tokyo (Asia/Tokyo)."),
    scenario("date-90-days", "What date is 90 days after 2026-11-15?", "add_days",
             call("add_days", date="2026-11-15", days=90), answer="2027-02-13."),
    scenario("unit-marathon-mi", "Convert 42.195 km to mi.", "convert_units",
             call("convert_units", value=42.195, from_unit="km", to_unit="mi"), answer="42.195 km = 26.219 mi."),
    scenario("unit-lb-kg", "How many kg is 180 lb?", "convert_units",
             call("convert_units", value=180, from_unit="lb", to_unit="kg"), answer="180 lb is 81.647 kg."),
    scenario("unit-sensor-fahrenheit", "What does sensor lab-1 read in Fahrenheit?", "read_sensor",
             call("read_sensor", sensor_id="lab-1", unit="fahrenheit"), answer="lab-1 reads 70.7 °F.",
             observed=("70.7 fahrenheit",)),
    scenario("unit-cups-ml", "How many millilitres are 5 cups?", "convert_units",
             call("convert_units", value=5, from_unit="cup", to_unit="ml"), answer="5 cups are 1182.94 ml."),
    scenario("unit-km-zh", "把 5 公里换算成英里。", "convert_units",
             call("convert_units", value=5, from_unit="公里", to_unit="英里"), answer="5 公里约等于 3.107 英里。"),

    # --- quoting and escaping in arguments ---------------------------------------------------------------
    scenario("quote-double-quotes", "Save a note titled 'Quote \"of the day\"' with: She said: \"it's fine\".",
             "save_note", call("save_note", title='Quote "of the day"', body='She said: "it\'s fine"'),
             answer='Saved the note "Quote "of the day"".'),
    scenario("quote-backslashes", r"In C:\Users\ada\notes.txt replace \n with \r\n.", "replace_in_file",
             call("replace_in_file", path="C:\\Users\\ada\\notes.txt", old="\\n", new="\\r\\n"),
             answer=r"Replaced \n with \r\n in C:\Users\ada\notes.txt."),
    scenario("quote-newlines-tabs", "Email ops@example.com a two-line status: 'All green' then an indented 'db ok'.",
             "send_email", call("send_email", to="ops@example.com", subject="Status", body="All green\n\tdb ok\n"),
             answer="Sent the status to ops@example.com."),
    scenario("quote-unicode", "Save a note 'Café ☕ — naïve 日本語' saying 'launch 🚀 at 9'.", "save_note",
             call("save_note", title="Café ☕ — naïve 日本語", body="launch 🚀 at 9"), answer="Saved «Café ☕ — naïve 日本語»."),
    scenario("quote-regex", r"Find methods that take only self: def \w+\(self\).", "grep_code",
             call("grep_code", pattern=r"def \w+\(self\)"), answer="Two matches, in app/client.py and app/jobs.py."),
    scenario("quote-json-in-string", 'Save a note "config" whose body is the JSON {"a": 1, "b": [1, 2]}.', "save_note",
             call("save_note", title="config", body='{"a": 1, "b": [1, 2]}'), answer="Saved the config note."),
    scenario("quote-apostrophes", "Search the wiki for O'Brien's \"onboarding\" guide.", "search",
             call("search", query='O\'Brien\'s "onboarding" guide'), answer="Found O'Brien's \"onboarding\" guide."),
    scenario("quote-commit-message", "Commit with the message: Fix: handle `None` in parse() / Closes #12.",
             "git_commit run_tests", call("git_commit", message="Fix: handle `None` in parse()\n\nCloses #12"),
             answer="Committed 3f9c2ab."),

    # --- coding, ops and text work with ordinary tool names -------------------------------------------------
    scenario("code-run-tests-verbose", "Run tests/test_api.py verbosely.", "run_tests",
             call("run_tests", path="tests/test_api.py", verbose=True), answer="48 passed, 0 failed."),
    scenario("code-grep-then-replace", "Replace 'import requests' with 'import httpx' in app/client.py.",
             "grep_code replace_in_file show_file",
             call("show_file", path="app/client.py"),
             call("replace_in_file", path="app/client.py", old="import requests", new="import httpx"),
             answer="app/client.py now imports httpx."),
    scenario("code-format-python", "Format: def f(x):return x*2", "format_code",
             call("format_code", code="def f(x):return x*2"), answer="Formatted the Python code."),
    scenario("code-test-then-commit", "Run the tests and, if green, commit as 'Add retries'.", "run_tests git_commit",
             call("run_tests", path="tests"), call("git_commit", message="Add retries"),
             answer="Tests are green (48 passed); committed 3f9c2ab."),
    scenario("ops-scale-web", "Scale web to 5 replicas.", "scale_service",
             call("scale_service", name="web", replicas=5), answer="web now runs 5 replicas."),
    scenario("ops-disk-then-restart", "db-1's /var is filling up: check it and restart its log shipper immediately.",
             "check_disk restart_service",
             call("check_disk", host="db-1"), call("restart_service", name="log-shipper", mode="immediate"),
             answer="/var on db-1 is 93% used; log-shipper was restarted immediately."),
    scenario("ops-deploy-production", "Ship api 1.8.0 to production.", "deploy",
             call("deploy", service="api", version="1.8.0", environment="production"),
             answer="api 1.8.0 is deployed to production."),
    scenario("ops-metrics-day", "p95 latency over the last 24h?", "query_metrics",
             call("query_metrics", metric="p95_latency", window="24h"), answer="212 ms over 24h."),
    scenario("ops-deploy-retry-after-lock", "Deploy search 3.1.0 to staging; if it is locked, wait and retry.",
             "deploy sleep",
             call("deploy", service="search", version="3.1.0"), call("sleep", seconds=60),
             call("deploy", service="search", version="3.1.0"),
             answer="search 3.1.0 is deployed to staging (the first try hit a lock)."),
    scenario("ops-run-command", "List /var/log on the build host.", "run_command",
             call("run_command", command="ls -la /var/log"), answer="/var/log holds app.log (4096 bytes)."),
    scenario("ops-get-config", "What is the request timeout in the config?", "get",
             call("get", key="http.timeout_seconds"), answer="The timeout is 30 seconds."),
    scenario("ops-fetch-status", "What version does https://example.com/status.json report?", "fetch",
             call("fetch", url="https://example.com/status.json"), answer="Version 2.4.1, status ok."),
    scenario("text-word-count", "How many words are in 'the quick brown fox jumps'?", "word_count",
             call("word_count", text="the quick brown fox jumps"), answer="5 words."),
    scenario("text-translate-fr", "Translate 'Good morning' into French.", "translate_text",
             call("translate_text", text="Good morning", target_language="French"), answer="Bonjour"),
    scenario("text-translate-zh", "把“早上好”翻译成英语。", "translate_text",
             call("translate_text", text="早上好", target_language="English"), answer="Good morning"),
    scenario("text-replace-simple", "In 'colour and flavour', use US spelling for colour.", "replace_text",
             call("replace_text", text="colour and flavour", find="colour", replace="color"),
             answer="color and flavour"),
]
