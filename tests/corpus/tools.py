"""The corpus's ordinary tools: plain ``@tool`` functions that record every call with its exact arguments.

Each tool appends ``(name, arguments)`` to :data:`LOG` as the function received them (defaults applied, so
a defaulted argument shows), and, when ``$CORPUS_CALLS`` names a file, a JSON line there too (the CLI tests
serve these same functions from an MCP server in another process, :mod:`tests.corpus.mcp_server`).

Live values (a sensor, a job's status, a queue's length, a clock, a price) answer from a fixed sequence,
one reading per call of the same arguments: a second call that ran returns the second reading, so a result
reused from the first call shows. Every tool is shared by all scenarios; :func:`reset` clears the log.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

from langchain_core.tools import BaseTool, tool
from pydantic_core import PydanticUndefined

from reinloop.tools import configure

LOG: list[tuple[str, dict[str, Any]]] = []
"""Every call the tools ran, in order: ``(tool name, the arguments it ran with)``."""

CALLS_FILE = "CORPUS_CALLS"
"""The environment variable naming a JSON-lines file the calls are appended to as well (MCP server)."""


def reset() -> None:
    """Forget every recorded call (a scenario starts with none)."""
    LOG.clear()


def log(name: str, args: dict[str, Any]) -> int:
    """Record a call of ``name``; return how many identical calls ran before it (the reading to give)."""
    args = dict(args)
    earlier = sum(1 for n, a in LOG if n == name and a == args)
    LOG.append((name, args))
    if path := os.environ.get(CALLS_FILE):
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps([name, args], ensure_ascii=False) + "\n")
    return earlier


def reading(values: list[Any], n: int) -> Any:
    """The ``n``-th reading of a live value (the last one repeats)."""
    return values[min(n, len(values) - 1)]


# --- coding -------------------------------------------------------------------------------------


@tool
def run_tests(path: str, verbose: bool = False) -> str:
    """Run the test suite at path (a file or a folder) and report how many tests passed and failed."""
    log("run_tests", locals())
    return f"{path}: 48 passed, 0 failed in 3.2s" + (" (verbose output omitted)" if verbose else "")


@tool
def grep_code(pattern: str, path: str = ".") -> str:
    """Search the code under path for a regular expression; returns matching lines as file:line: text."""
    log("grep_code", locals())
    return f"{path}/app/client.py:3: matched {pattern!r}\n{path}/app/jobs.py:41: matched {pattern!r}"


@configure(side_effects=True)
@tool
def replace_in_file(path: str, old: str, new: str) -> str:
    """Replace every occurrence of the text old with new in the file at path."""
    log("replace_in_file", locals())
    return f"replaced 2 occurrences in {path}"


@tool
def format_code(code: str, language: Literal["python", "javascript", "go"] = "python") -> str:
    """Format a snippet of source code in the given language and return the formatted code."""
    log("format_code", locals())
    return f"formatted {language} code ({len(code)} characters in)"


@configure(side_effects=True)
@tool
def git_commit(message: str) -> str:
    """Commit the staged changes with the given commit message."""
    log("git_commit", locals())
    return "committed 3f9c2ab"


@tool
def show_file(path: str) -> str:
    """The text of the file at path."""
    log("show_file", locals())
    return f"# {path}\nimport requests\n\ndef fetch(url):\n    return requests.get(url).text\n"


# --- ops ----------------------------------------------------------------------------------------


@tool
def job_status(job_id: str) -> str:
    """The current status of a background job: queued, running, succeeded or failed."""
    n = log("job_status", locals())
    return f"job {job_id}: {reading(['running (step 2 of 5)', 'succeeded'], n)}"


@tool
def sleep(seconds: int) -> str:
    """Wait the given number of seconds before the next step."""
    log("sleep", locals())
    return f"waited {seconds} s"


@tool
def queue_length(queue: str) -> str:
    """How many messages are waiting in a queue right now."""
    n = log("queue_length", locals())
    return f"{queue}: {reading([41, 7, 0], n)} messages waiting"


@tool
def read_sensor(sensor_id: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """The current temperature reading of a sensor, in the unit asked for."""
    n = log("read_sensor", locals())
    value = reading([21.5, 22.75, 23.0], n)
    return f"{sensor_id}: {value if unit == 'celsius' else round(value * 1.8 + 32, 2)} {unit}"


@tool
def current_time(timezone: str = "UTC") -> str:
    """The current date and time in a time zone (an IANA name)."""
    n = log("current_time", locals())
    return f"2026-03-02T10:{reading(['00:00', '00:42', '05:10'], n)} ({timezone})"


@configure(side_effects=True)
@tool
def restart_service(name: str, mode: Literal["graceful", "immediate"] = "graceful") -> str:
    """Restart a service; graceful waits for open requests to finish, immediate does not."""
    log("restart_service", locals())
    return f"{name} restarted ({mode})"


@configure(side_effects=True)
@tool
def scale_service(name: str, replicas: int) -> str:
    """Set the number of replicas of a service."""
    log("scale_service", locals())
    return f"{name} now runs {replicas} replicas"


@configure(side_effects=True)
@tool
def deploy(service: str, version: str, environment: Literal["staging", "production"] = "staging") -> str:
    """Deploy a version of a service to an environment."""
    n = log("deploy", locals())
    if service == "search" and n == 0:
        raise RuntimeError("another deploy holds the lock on search; try again in a minute")
    return f"{service} {version} deployed to {environment}"


@tool
def check_disk(host: str) -> str:
    """Disk usage of a host, per mount point."""
    log("check_disk", locals())
    return f"{host}: / 41% used, /var 93% used"


@tool
def query_metrics(metric: str, window: Literal["1h", "24h", "7d"] = "1h") -> str:
    """The value of a monitoring metric over a time window."""
    log("query_metrics", locals())
    return f"{metric} over {window}: 212 ms"


@configure(side_effects=True)
@tool
def run_command(command: str) -> str:
    """Run a shell command on the build host and return its output."""
    log("run_command", locals())
    return f"$ {command}\ntotal 12\n-rw-r--r-- 1 root root 4096 app.log"


@tool
def get(key: str) -> str:
    """The value of a key in the configuration store."""
    log("get", locals())
    return f"{key} = 30"


# --- finance ------------------------------------------------------------------------------------


@configure(side_effects=True)
@tool
def transfer(account: str, amount: float, speed: Literal["standard", "express"] = "standard") -> str:
    """Transfer an amount in euros to an account; standard arrives in 2 days, express the same day."""
    log("transfer", locals())
    return f"transferred {amount:.2f} EUR to {account} ({speed})"


@configure(side_effects=True)
@tool
def pay_invoice(invoice_id: str, amount: float, currency: Literal["USD", "EUR", "GBP", "JPY"] = "USD") -> str:
    """Pay an invoice in the given currency (an ISO 4217 code)."""
    log("pay_invoice", locals())
    return f"paid {invoice_id}: {amount} {currency}"


@configure(side_effects=True)
@tool
def refund(order_id: str, amount: float, currency: Literal["USD", "EUR"] = "USD") -> str:
    """Refund an amount of an order to the customer, in USD or EUR."""
    log("refund", locals())
    return f"refunded {amount} {currency} on {order_id}"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount from one currency to another at today's rate (ISO 4217 codes)."""
    log("convert_currency", locals())
    return f"{amount} {from_currency} = {round(amount * 1.06, 2)} {to_currency}"


@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """Today's exchange rate from the base currency to the quote currency."""
    log("get_exchange_rate", locals())
    return f"1 {base} = { {'EUR': 0.92, 'GBP': 0.79, 'JPY': 151.3}.get(quote, 1.0)} {quote}"


@tool
def get_balance(account: str, currency: Literal["USD", "EUR", "GBP"] = "USD") -> str:
    """The balance of an account, in the currency asked for."""
    log("get_balance", locals())
    return f"{account}: 1520.40 {currency}"


@tool
def get_stock_price(symbol: str) -> str:
    """The latest traded price of a stock."""
    n = log("get_stock_price", locals())
    return f"{symbol}: {reading([101.2, 101.35, 100.9], n)} USD"


@tool
def get_order(order_id: str) -> str:
    """An order's items, total and status."""
    log("get_order", locals())
    return f"order {order_id}: 2 items, total 84.00 EUR, shipped"


# --- text, data, dates, units -------------------------------------------------------------------


@tool
def replace_text(text: str, find: str, replace: str) -> str:
    """The text with every occurrence of find replaced by replace."""
    log("replace_text", locals())
    return text.replace(find, replace)


@tool
def render_template(template: str, name: str) -> str:
    """Fill a template's {name} field with the given name."""
    log("render_template", locals())
    return template.replace("{name}", name)


@tool
def word_count(text: str) -> str:
    """How many words the text has."""
    log("word_count", locals())
    return str(len(text.split()))


@tool
def translate_text(text: str, target_language: str) -> str:
    """Translate text into the target language (an English language name)."""
    log("translate_text", locals())
    return {"French": "Bonjour", "English": "Good morning", "German": "Guten Morgen"}.get(target_language, text)


@configure(side_effects=True)
@tool
def save_note(title: str, body: str) -> str:
    """Save a note with a title and a body."""
    log("save_note", locals())
    return f"saved note {title!r} ({len(body)} characters)"


@configure(side_effects=True)
@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email."""
    log("send_email", locals())
    return f"sent to {to}"


@configure(side_effects=True)
@tool
def delete_user(user_id: int, reason: str = "") -> str:
    """Delete a user account for good."""
    log("delete_user", locals())
    return f"user {user_id} deleted"


@configure(side_effects=True)
@tool
def create_ticket(title: str, priority: Literal["low", "normal", "high"] = "normal", assignee: str | None = None) -> str:
    """Open a ticket in the issue tracker."""
    log("create_ticket", locals())
    return f"opened TICKET-318 ({priority})" + (f", assigned to {assignee}" if assignee else "")


@tool
def export_table(table: str, format: str = "csv") -> str:  # noqa: A002
    """Export a database table to a file. format is the file format, for example 'csv' or 'parquet'."""
    log("export_table", locals())
    return f"exported {table} to /exports/{table}.{format}"


@tool
def search(query: str, limit: int = 5) -> str:
    """Search the company wiki, e.g. 'vacation policy' or 'expense report'; returns the best pages."""
    log("search", locals())
    return f"1. {query} (updated 2026-01-12)\n2. FAQ: {query}"


@tool
def fetch(url: str) -> str:
    """Fetch a URL and return the body of the response."""
    log("fetch", locals())
    return '{"status": "ok", "version": "2.4.1"}'


@configure(side_effects=True)
@tool
def schedule_report(report: str, cron: str) -> str:
    """Schedule a report; cron is a cron expression, for example '0 9 * * 1'."""
    log("schedule_report", locals())
    return f"{report} scheduled ({cron})"


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units, such as 'kilometers', 'miles', 'pounds' or 'kilograms'."""
    log("convert_units", locals())
    factors = {("km", "mi"): 0.621371, ("kilometers", "miles"): 0.621371, ("lb", "kg"): 0.453592,
               ("cup", "ml"): 236.588, ("公里", "英里"): 0.621371}
    return f"{value} {from_unit} = {round(value * factors.get((from_unit, to_unit), 1.0), 3)} {to_unit}"


@tool
def add_days(date: str, days: int) -> str:
    """The date that is a number of days after a date (YYYY-MM-DD)."""
    log("add_days", locals())
    return {("2026-01-30", 30): "2026-03-01", ("2026-11-15", 90): "2027-02-13"}.get((date, days), "2026-06-01")


@tool
def days_between(start: str, end: str) -> str:
    """How many days lie between two dates (YYYY-MM-DD)."""
    log("days_between", locals())
    return {("2026-01-01", "2026-03-01"): "59", ("2024-03-01", "2024-05-01"): "61"}.get((start, end), "30")


@tool
def weekday(date: str) -> str:
    """The day of the week of a date (YYYY-MM-DD)."""
    log("weekday", locals())
    return {"2026-12-25": "Friday"}.get(date, "Monday")


@tool
def evaluate(expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / and parentheses."""
    log("evaluate", locals())
    return {"3*24*60*60": "259200", "(1200-950)/950*100": "26.315789"}.get(expression, "0")


@tool
def lookup_fact(query: str) -> str:
    """A fact from the encyclopedia."""
    log("lookup_fact", locals())
    return {"mass of Jupiter": "Jupiter's mass is 1.898e27 kg.",
            "mass of Earth": "Earth's mass is 5.972e24 kg."}.get(query, "no entry")


@tool
def get_population(city: str) -> str:
    """A city's resident population (in Chinese, in units of 10,000: 万)."""
    log("get_population", locals())
    return {"北京": "北京常住人口 2185 万", "上海": "上海常住人口 2487 万"}.get(city, f"{city}: 无数据")


@tool
def get_oncall(team: str) -> str:
    """Who is on call for a team this week."""
    log("get_oncall", locals())
    return f"{team} on call: alice"


TOOLS: dict[str, BaseTool] = {t.name: t for t in [
    run_tests, grep_code, replace_in_file, format_code, git_commit, show_file,
    job_status, sleep, queue_length, read_sensor, current_time, restart_service, scale_service, deploy, check_disk,
    query_metrics, run_command, get,
    transfer, pay_invoice, refund, convert_currency, get_exchange_rate, get_balance, get_stock_price, get_order,
    replace_text, render_template, word_count, translate_text, save_note, send_email, delete_user, create_ticket,
    export_table, search, fetch, schedule_report, convert_units, add_days, days_between, weekday, evaluate,
    lookup_fact, get_population, get_oncall,
]}
"""Every corpus tool, by name."""


def defaults(name: str) -> dict[str, Any]:
    """The arguments tool ``name`` fills in itself when a call leaves them out."""
    schema = TOOLS[name].args_schema
    fields = getattr(schema, "model_fields", {})
    return {k: f.default for k, f in fields.items() if f.default is not PydanticUndefined}
