"""The held-out set of the eval: 46 tasks no rule was tuned on (``python -m benchmarks.eval --set heldout``).

Frozen: BENCHMARKS.md records this file's sha256 and ``tests/bench/test_heldout.py``
fails when the file differs from it. Never change a task, a tool or a checker
while looking at a model's failures on this set; the development set
(``tasks.py``, ``--set dev``) is the one to look at.

Each task runs in a fresh :class:`Desk`: an office's files, contacts, orders,
inventory, calendar and live services, with plain LangChain tools over them
(deterministic Python functions; the ones that change the desk are declared
``side_effects=True`` and log each change in :attr:`Desk.effects`; the live
ones, a job's status or a parcel's tracking, move on one state per reading).
A task gives its text, the tools the agent gets, a plan a correct agent could
follow, answers its checker must accept and answers it must refuse, and its
checker: a function of the final answer and the desk after the run. Checkers
are strict about the value (numbers parsed, dates and weekdays read in English
or Chinese) and tolerant about the wording; where the right move is to ask the
user or to stop, the checker wants a question or a refusal, and that nothing
was changed.

Families (the letter an id starts with): U unit conversions, T dates, R record
and text edits, M multi-tool plans, P polling a live status, W answers
without numbers, Q ask the user, S stop or refuse.
"""

from __future__ import annotations

import ast
import configparser
import copy
import operator
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from langchain_core.tools import BaseTool, tool

from reinloop.models.simulation import PlanStep
from reinloop.tools import configure

TODAY = date(2026, 3, 2)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# --- the desk's starting state -------------------------------------------------------------------------

FILES = {
    "notes/todo.txt": "[ ] buy milk\n[ ] call the bank\n[x] pay rent\n[ ] book dentist\n",
    "config/app.ini": "[server]\nhost = 0.0.0.0\nport = 8080\ntimeout = 30\n\n[client]\nretries = 3\ntimeout = 10\n",
    "notes/log.txt": "2026-02-27 kickoff held\n2026-02-28 budget approved\n",
    "docs/readme.md": "# Instalation guide\n\nRun the instalation script, then restart the service.\n",
    "notes/meeting.txt": "Quarterly review\nDate: 2026-03-19\nRoom: to be booked\n",
    "notes/invoice.txt": "Invoice INV-2231\nIssued: 2026-01-28\nAmount: 1,840.00 EUR\nTerms: due 30 days after issue\n",
    "notes/trip.txt": "行程：上海 → 苏州\n距离：52.8 英里\n",
    "manuals/printer.txt": ("Status light colours\n- green: ready\n- amber: paper jam, open tray 2 and remove the sheet\n"
                            "- red: toner empty\n"),
    "reports/q4_report.txt": "Q4 report\nRevenue grew 8% over Q3.\n",
}
CONTACTS = {
    "C-101": {"name": "Chen Jie", "department": "Logistics", "title": "coordinator", "email": "chen.jie@example.com",
              "phone": "137-2000-1001"},
    "C-102": {"name": "Li Wei", "department": "Sales", "title": "account manager", "email": "li.wei@example.com",
              "phone": "137-2000-1002"},
    "C-103": {"name": "Li Wei", "department": "Finance", "title": "accountant", "email": "wei.li@example.com",
              "phone": "137-2000-1003"},
    "C-104": {"name": "Zhang Min", "department": "Finance", "title": "analyst", "email": "zhang.min@example.com",
              "phone": "137-2000-1004"},
    "C-105": {"name": "王芳", "department": "市场部", "title": "专员", "email": "wang.fang@example.com",
              "phone": "137-2000-1005"},
    "C-106": {"name": "张伟", "department": "销售部", "title": "经理", "email": "zhang.wei@example.com",
              "phone": "137-2000-1006"},
    "C-107": {"name": "张强", "department": "财务部", "title": "经理", "email": "zhang.qiang@example.com",
              "phone": "137-2000-1007"},
    "C-108": {"name": "Maria Lopez", "department": "Engineering", "title": "project lead",
              "email": "maria.lopez@example.com", "phone": "137-2000-1008"},
    "C-109": {"name": "Sofia Brandt", "department": "Legal", "title": "counsel", "email": "sofia.brandt@example.com",
              "phone": "137-2000-1009"},
}
ORDERS = {
    "1042": {"customer": "Chen Jie", "item": "desk lamp", "quantity": 3, "unit_price": 30.0, "date": "2026-01-20",
             "status": "open"},
    "1049": {"customer": "Ana Silva", "item": "notebook", "quantity": 5, "unit_price": 3.0, "date": "2026-02-01",
             "status": "delivered"},
    "1057": {"customer": "Chen Jie", "item": "monitor arm", "quantity": 1, "unit_price": 89.0, "date": "2026-02-26",
             "status": "out for delivery"},
    "1061": {"customer": "Ana Silva", "item": "backpack", "quantity": 1, "unit_price": 45.0, "date": "2026-02-25",
             "status": "open"},
    "1063": {"customer": "Ana Silva", "item": "water bottle", "quantity": 2, "unit_price": 12.0, "date": "2026-02-28",
             "status": "open"},
}
INVENTORY = {
    "A-17": ("hex bolts", 220, 100, "lb"), "B-02": ("washers", 40, 50, "boxes"), "C-33": ("cable ties", 15, 20, "packs"),
    "D-08": ("brackets", 75, 60, "pieces"), "E-11": ("hinges", 9, 10, "pieces"),
}
"""part id: (name, stock, reorder level, unit)."""
PROJECTS = {
    "falcon": "Falcon: owner Maria Lopez, deadline 2026-05-15, status on track",
    "heron": "Heron: owner Sofia Brandt, deadline 2026-04-30, status blocked (waiting for legal review)",
}
MEETINGS = {
    "2026-03-03": [{"start": "09:30", "end": "10:30", "title": "design review", "room": "A"},
                   {"start": "15:00", "end": "16:00", "title": "budget sync", "room": "C"}],
    "2026-03-19": [],
}
ROOMS = ("A", "B", "C")
LIVE = {
    "job": {"build-42": ["running: compiling (1/3)", "running: testing (2/3)", "running: packaging (3/3)",
                         "succeeded: artifact build-42.tar.gz published"],
            "export-7": ["queued", "running: 40% exported", "running: 80% exported", "failed: disk full on /data"]},
    "parcel": {"SF1234": ["已揽收（杭州）", "运输中（上海转运中心）", "派送中", "已签收，签收人：李雷"]},
    "queue": {"emails": ["pending 12, processed today 30", "pending 7, processed today 35",
                         "pending 3, processed today 39", "pending 0, processed today 42"]},
    "server": {"db-2": ["restarting", "restarting", "starting services", "online, version 5.7.2"]},
}
"""Live services: each reading of an id returns the next state, then the last one for good."""
GLOSSARY = {"数据库": "database", "智能体": "agent", "天气": "weather", "苹果": "apple", "朋友": "friend"}
SPELLING = {"accomodate": "accommodate", "recieve": "receive", "definately": "definitely", "seperate": "separate"}
LENGTH = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048, "yd": 0.9144, "mi": 1609.344}
WEIGHT = {"g": 1.0, "kg": 1000.0, "lb": 453.59237, "oz": 28.349523125, "jin": 500.0, "t": 1_000_000.0}
UNIT_NAMES = {
    "millimetre": "mm", "millimeter": "mm", "毫米": "mm", "centimetre": "cm", "centimeter": "cm", "厘米": "cm",
    "metre": "m", "meter": "m", "米": "m", "kilometre": "km", "kilometer": "km", "公里": "km", "千米": "km",
    "inch": "in", "inches": "in", "英寸": "in", "foot": "ft", "feet": "ft", "英尺": "ft", "yard": "yd", "码": "yd",
    "mile": "mi", "英里": "mi", "gram": "g", "克": "g", "kilogram": "kg", "公斤": "kg", "千克": "kg", "kilo": "kg",
    "pound": "lb", "lbs": "lb", "磅": "lb", "ounce": "oz", "盎司": "oz", "斤": "jin", "市斤": "jin", "tonne": "t",
    "ton": "t", "吨": "t", "celsius": "c", "°c": "c", "℃": "c", "摄氏度": "c", "fahrenheit": "f", "°f": "f",
    "℉": "f", "华氏度": "f", "kelvin": "k", "开尔文": "k",
}


def _unit(name: str, table: dict[str, float] | tuple[str, ...], kind: str) -> str:
    key = name.strip().lower()
    key = UNIT_NAMES.get(key, UNIT_NAMES.get(key.rstrip("s"), key))
    if key not in table:
        raise ValueError(f"unknown {kind} unit {name!r}; use one of {', '.join(table)}")
    return key


def _day(text: str) -> date:
    """A date written YYYY-MM-DD, YYYY/MM/DD or YYYY年M月D日."""
    found = re.fullmatch(r"\s*(\d{4})\s*[-/年]\s*(\d{1,2})\s*[-/月]\s*(\d{1,2})\s*日?\s*", text)
    if not found:
        raise ValueError(f"{text!r} is not a date; write it as YYYY-MM-DD, e.g. 2026-03-02")
    try:
        return date(*map(int, found.groups()))
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid date ({exc})") from None


def _shown(day: date) -> str:
    return f"{day.isoformat()} ({WEEKDAYS[day.weekday()]})"


def _figure(value: float) -> str:
    return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.0f}"


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"round": round, "abs": abs, "min": min, "max": max}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        return _FUNCTIONS[node.func.id](*map(_evaluate, node.args))
    raise ValueError(f"unsupported expression element {ast.dump(node)[:60]}; use numbers, + - * / // % **, "
                     f"parentheses, round, abs, min, max")


class Desk:
    """One run's world: its state, the tools over it, and a log of every change a tool made."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.files = dict(FILES)
        self.contacts = copy.deepcopy(CONTACTS)
        self.orders = copy.deepcopy(ORDERS)
        self.meetings = copy.deepcopy(MEETINGS)
        self.bookings: list[tuple[str, str, str, str]] = []
        self.emails: list[dict[str, str]] = []
        self.purchase_requests: list[tuple[str, int]] = []
        self.effects: list[tuple[str, dict[str, Any]]] = []
        """Every change a side-effecting tool made: (tool, its arguments)."""
        self.readings: dict[str, int] = {}
        """How often each live id was read."""
        self.waited = 0.0
        self.names = names

    def state(self) -> dict[str, Any]:
        """What the tools can change (live readings aside): for checkers and tests."""
        return copy.deepcopy({"files": self.files, "contacts": self.contacts, "orders": self.orders,
                              "meetings": self.meetings, "bookings": self.bookings, "emails": self.emails,
                              "purchase_requests": self.purchase_requests})

    def tools(self) -> list[BaseTool]:
        """The task's tools, over this desk."""
        catalogue = self.catalogue()
        return [catalogue[name] for name in self.names]

    def close(self) -> None:
        """Nothing to clean up: the desk lives in memory."""

    def _changed(self, name: str, **args: Any) -> None:
        self.effects.append((name, args))

    def _live(self, kind: str, key: str) -> str:
        states = LIVE[kind].get(key.strip())
        if states is None:
            raise ValueError(f"no {kind} {key!r}; known: {', '.join(LIVE[kind])}")
        seen = self.readings.get(f"{kind}:{key.strip()}", 0)
        self.readings[f"{kind}:{key.strip()}"] = seen + 1
        return states[min(seen, len(states) - 1)]

    def catalogue(self) -> dict[str, BaseTool]:
        """Every tool of the set, over this desk, by name."""
        desk = self

        @tool
        def calculator(expression: str) -> str:
            """Evaluate an arithmetic expression, e.g. (3 + 4) * 2.5 or round(10 / 3, 2)."""
            try:
                value = _evaluate(ast.parse(expression.strip(), mode="eval"))
            except (SyntaxError, ZeroDivisionError, TypeError) as exc:
                raise ValueError(f"cannot evaluate {expression!r}: {exc}") from None
            return _figure(value) if isinstance(value, float) else str(value)

        @tool
        def convert_length(value: float, from_unit: str, to_unit: str) -> str:
            """Convert a length. Units: mm, cm, m, km, in, ft, yd, mi (names such as mile or 公里 work too)."""
            a, b = _unit(from_unit, LENGTH, "length"), _unit(to_unit, LENGTH, "length")
            return f"{_figure(value)} {a} = {_figure(value * LENGTH[a] / LENGTH[b])} {b}"

        @tool
        def convert_weight(value: float, from_unit: str, to_unit: str) -> str:
            """Convert a weight. Units: g, kg, lb, oz, jin (斤, 500 g), t (names such as pound or 公斤 work too)."""
            a, b = _unit(from_unit, WEIGHT, "weight"), _unit(to_unit, WEIGHT, "weight")
            return f"{_figure(value)} {a} = {_figure(value * WEIGHT[a] / WEIGHT[b])} {b}"

        @tool
        def convert_temperature(value: float, from_unit: str, to_unit: str) -> str:
            """Convert a temperature between C (Celsius), F (Fahrenheit) and K (kelvin)."""
            a, b = _unit(from_unit, ("c", "f", "k"), "temperature"), _unit(to_unit, ("c", "f", "k"), "temperature")
            celsius = {"c": value, "f": (value - 32) * 5 / 9, "k": value - 273.15}[a]
            result = {"c": celsius, "f": celsius * 9 / 5 + 32, "k": celsius + 273.15}[b]
            return f"{_figure(value)} {a.upper()} = {_figure(round(result, 6))} {b.upper()}"

        @tool
        def today() -> str:
            """Today's date and weekday, from the office calendar."""
            return _shown(TODAY)

        @tool
        def add_days(start: str, days: int) -> str:
            """The date a number of days after (or, if negative, before) a date given as YYYY-MM-DD."""
            return _shown(_day(start) + timedelta(days=days))

        @tool
        def days_between(start: str, end: str) -> str:
            """How many days from one date to another (both YYYY-MM-DD); negative if end is before start."""
            a, b = _day(start), _day(end)
            return f"{(b - a).days} days from {a.isoformat()} to {b.isoformat()}"

        @tool
        def weekday(day: str) -> str:
            """The day of the week of a date given as YYYY-MM-DD."""
            found = _day(day)
            return f"{found.isoformat()} is a {WEEKDAYS[found.weekday()]}"

        @tool
        def list_files(folder: str = "") -> str:
            """List the files in a folder of the office share (all files if no folder is given)."""
            prefix = folder.strip().strip("/")
            names = sorted(p for p in desk.files if not prefix or p.startswith(prefix + "/"))
            return "\n".join(names) if names else f"no files under {folder!r}"

        @tool
        def read_file(path: str) -> str:
            """Read a text file from the office share, e.g. notes/todo.txt."""
            key = path.strip().lstrip("./")
            if key not in desk.files:
                raise ValueError(f"no file {path!r} on the share")
            return desk.files[key]

        @configure(side_effects=True)
        @tool
        def write_file(path: str, content: str) -> str:
            """Create a text file on the office share, or replace its whole content."""
            key = path.strip().lstrip("./")
            desk.files[key] = content
            desk._changed("write_file", path=key, content=content)
            return f"wrote {len(content)} characters to {key}"

        @configure(side_effects=True)
        @tool
        def append_to_file(path: str, text: str) -> str:
            """Add text as a new line at the end of an existing file on the office share."""
            key = path.strip().lstrip("./")
            if key not in desk.files:
                raise ValueError(f"no file {path!r} on the share")
            old = desk.files[key]
            desk.files[key] = old + ("" if not old or old.endswith("\n") else "\n") + text.rstrip("\n") + "\n"
            desk._changed("append_to_file", path=key, text=text)
            return f"appended 1 line to {key}"

        @configure(side_effects=True)
        @tool
        def replace_in_file(path: str, old: str, new: str) -> str:
            """Replace every occurrence of the exact text `old` with `new` in a file on the office share."""
            key = path.strip().lstrip("./")
            if key not in desk.files:
                raise ValueError(f"no file {path!r} on the share")
            count = desk.files[key].count(old) if old else 0
            if not count:
                raise ValueError(f"{old!r} does not occur in {key}; nothing was replaced")
            desk.files[key] = desk.files[key].replace(old, new)
            desk._changed("replace_in_file", path=key, old=old, new=new)
            return f"replaced {count} occurrence(s) in {key}"

        def contact_line(cid: str) -> str:
            c = desk.contacts[cid]
            return f"{cid} | {c['name']} | {c['department']} | {c['title']} | {c['email']} | {c['phone']}"

        @tool
        def find_contact(name: str) -> str:
            """Find contacts by name (or part of it); returns id | name | department | title | email | phone."""
            query = name.strip().lower()
            found = [cid for cid, c in desk.contacts.items()
                     if query and (query in c["name"].lower() or query == (c["name"][:1] + c["title"]).lower())]
            return "\n".join(map(contact_line, found)) if found else f"no contact matches {name!r}"

        @configure(side_effects=True)
        @tool
        def update_contact(contact_id: str, field: str, value: str) -> str:
            """Change one field (email, phone, department or title) of the contact with this id, e.g. C-101."""
            cid, key = contact_id.strip().upper(), field.strip().lower()
            if cid not in desk.contacts:
                raise ValueError(f"no contact {contact_id!r}; find the id with find_contact")
            if key not in ("email", "phone", "department", "title"):
                raise ValueError(f"cannot change {field!r}; fields are email, phone, department, title")
            old, desk.contacts[cid][key] = desk.contacts[cid][key], value
            desk._changed("update_contact", contact_id=cid, field=key, value=value)
            return f"{cid} {key}: {old} -> {value}"

        def order_line(oid: str) -> str:
            o = desk.orders[oid]
            return (f"order {oid} | {o['customer']} | {o['item']} | quantity {o['quantity']} | unit price "
                    f"{o['unit_price']:.2f} | placed {o['date']} | {o['status']}")

        @tool
        def find_orders(customer: str) -> str:
            """List a customer's orders: number, item, quantity, unit price, date placed and status."""
            query = customer.strip().lower()
            found = [oid for oid, o in desk.orders.items() if query and query in o["customer"].lower()]
            return "\n".join(map(order_line, found)) if found else f"no orders for {customer!r}"

        @tool
        def get_order(order_id: str) -> str:
            """One order by its number, e.g. 1042."""
            oid = order_id.strip().lstrip("#")
            if oid not in desk.orders:
                raise ValueError(f"no order {order_id!r}")
            return order_line(oid)

        @configure(side_effects=True)
        @tool
        def cancel_order(order_id: str) -> str:
            """Cancel an open order by its number."""
            oid = order_id.strip().lstrip("#")
            if oid not in desk.orders:
                raise ValueError(f"no order {order_id!r}")
            if desk.orders[oid]["status"] != "open":
                raise ValueError(f"order {oid} is {desk.orders[oid]['status']}: only open orders can be cancelled")
            desk.orders[oid]["status"] = "cancelled"
            desk._changed("cancel_order", order_id=oid)
            return f"order {oid} cancelled"

        @configure(side_effects=True)
        @tool
        def update_order(order_id: str, quantity: int | None = None, unit_price: float | None = None) -> str:
            """Change the quantity and/or the unit price of an open order."""
            oid = order_id.strip().lstrip("#")
            if oid not in desk.orders:
                raise ValueError(f"no order {order_id!r}")
            if quantity is not None:
                desk.orders[oid]["quantity"] = quantity
            if unit_price is not None:
                desk.orders[oid]["unit_price"] = unit_price
            desk._changed("update_order", order_id=oid, quantity=quantity, unit_price=unit_price)
            return order_line(oid)

        @tool
        def list_inventory() -> str:
            """Every part in the warehouse: id, name, stock and reorder level."""
            return "\n".join(f"{pid} {n}: stock {s} {u}, reorder level {r} {u}" for pid, (n, s, r, u) in INVENTORY.items())

        @tool
        def check_stock(part_id: str) -> str:
            """The stock and reorder level of one part, e.g. D-08."""
            pid = part_id.strip().upper()
            if pid not in INVENTORY:
                raise ValueError(f"no part {part_id!r}; parts are {', '.join(INVENTORY)}")
            n, s, r, u = INVENTORY[pid]
            return f"{pid} {n}: stock {s} {u}, reorder level {r} {u}"

        @configure(side_effects=True)
        @tool
        def create_purchase_request(part_id: str, quantity: int) -> str:
            """Ask purchasing to buy a quantity of a part."""
            pid = part_id.strip().upper()
            if pid not in INVENTORY:
                raise ValueError(f"no part {part_id!r}; parts are {', '.join(INVENTORY)}")
            desk.purchase_requests.append((pid, quantity))
            desk._changed("create_purchase_request", part_id=pid, quantity=quantity)
            return f"purchase request PR-{len(desk.purchase_requests)}: {quantity} {INVENTORY[pid][3]} of {pid}"

        @tool
        def lookup_project(name: str) -> str:
            """A project's owner, deadline and status, by project name."""
            key = name.strip().lower().removeprefix("project").removeprefix("项目").removesuffix("project").strip()
            found = PROJECTS.get(key.removesuffix("项目").strip())
            if found is None:
                raise ValueError(f"no project {name!r}; projects are Falcon, Heron")
            return found

        @tool
        def list_meetings(day: str) -> str:
            """The meetings on a date (YYYY-MM-DD): start, end, title and room."""
            key = _day(day).isoformat()
            found = desk.meetings.get(key, [])
            return "\n".join(f"{m['start']}-{m['end']} {m['title']} (room {m['room']})" for m in found) or f"no meetings on {key}"

        @configure(side_effects=True)
        @tool
        def reschedule_meeting(day: str, start: str, new_start: str) -> str:
            """Move the meeting that starts at `start` (HH:MM) on a date to start at `new_start`, same length."""
            key = _day(day).isoformat()
            meeting = next((m for m in desk.meetings.get(key, []) if m["start"] == _clock(start)), None)
            if meeting is None:
                raise ValueError(f"no meeting starts at {start!r} on {key}")
            begin, end = (int(t[:2]) * 60 + int(t[3:]) for t in (meeting["start"], meeting["end"]))
            moved = _clock(new_start)
            shifted = int(moved[:2]) * 60 + int(moved[3:]) + end - begin
            meeting["start"], meeting["end"] = moved, f"{shifted // 60:02d}:{shifted % 60:02d}"
            desk._changed("reschedule_meeting", day=key, start=start, new_start=moved)
            return f"{meeting['title']} on {key} now {meeting['start']}-{meeting['end']}"

        @configure(side_effects=True)
        @tool
        def book_room(room: str, day: str, start: str, end: str) -> str:
            """Book a meeting room (A, B or C) on a date (YYYY-MM-DD) from start to end (HH:MM, 24-hour clock)."""
            name = room.strip().upper().removeprefix("ROOM").strip()
            if name not in ROOMS:
                raise ValueError(f"no room {room!r}; rooms are A, B, C")
            booking = (name, _day(day).isoformat(), _clock(start), _clock(end))
            desk.bookings.append(booking)
            desk._changed("book_room", room=name, day=booking[1], start=booking[2], end=booking[3])
            return f"room {name} booked on {booking[1]} from {booking[2]} to {booking[3]}"

        @configure(side_effects=True)
        @tool
        def send_email(to: str, subject: str, body: str) -> str:
            """Send an email."""
            if "@" not in to:
                raise ValueError(f"{to!r} is not an email address")
            desk.emails.append({"to": to.strip().lower(), "subject": subject, "body": body})
            desk._changed("send_email", to=to, subject=subject, body=body)
            return f"email sent to {to.strip()}"

        @tool
        def job_status(job_id: str) -> str:
            """The current status of a build or export job."""
            return f"{job_id.strip()}: {desk._live('job', job_id)}"

        @tool
        def track_parcel(tracking_number: str) -> str:
            """The current tracking status of a parcel."""
            return f"{tracking_number.strip()}: {desk._live('parcel', tracking_number)}"

        @tool
        def queue_status(queue: str) -> str:
            """How many messages a mail queue has pending, and how many it processed today."""
            return f"queue {queue.strip()}: {desk._live('queue', queue)}"

        @tool
        def server_status(server: str) -> str:
            """The current state of a server."""
            return f"{server.strip()}: {desk._live('server', server)}"

        @tool
        def wait(seconds: float) -> str:
            """Wait a number of seconds (at most 60) before checking something again."""
            desk.waited += max(0.0, min(float(seconds), 60.0))
            return f"waited {_figure(min(float(seconds), 60.0))} s"

        @tool
        def translate(text: str, target: str) -> str:
            """Translate a word with the office glossary; target is 'en' (English) or 'zh' (Chinese)."""
            word, goal = text.strip().strip("'\"“”‘’"), target.strip().lower()
            table = GLOSSARY if goal.startswith("en") else {v: k for k, v in GLOSSARY.items()}
            if word.lower() not in {k.lower() for k in table}:
                raise ValueError(f"{text!r} is not in the glossary (to {target}); it has: {', '.join(table)}")
            return next(v for k, v in table.items() if k.lower() == word.lower())

        @tool
        def spell_check(word: str) -> str:
            """Check the spelling of one English word and suggest the right one."""
            key = word.strip().lower()
            if key in SPELLING:
                return f"{key}: misspelt; suggestion: {SPELLING[key]}"
            if key in SPELLING.values():
                return f"{key}: spelt correctly"
            return f"{key}: not in the dictionary"

        @tool
        def device_status(device_id: str) -> str:
            """The status of an office device (printer, scanner) by its id, e.g. P-1."""
            devices = {"P-1": "printer P-1: status light green", "P-3": "printer P-3: status light amber",
                       "S-2": "scanner S-2: status light green"}
            key = device_id.strip().upper()
            if key not in devices:
                raise ValueError(f"no device {device_id!r}; devices are {', '.join(devices)}")
            return devices[key]

        made = [calculator, convert_length, convert_weight, convert_temperature, today, add_days, days_between,
                weekday, list_files, read_file, write_file, append_to_file, replace_in_file, find_contact,
                update_contact, find_orders, get_order, cancel_order, update_order, list_inventory, check_stock,
                create_purchase_request, lookup_project, list_meetings, reschedule_meeting, book_room, send_email,
                job_status, track_parcel, queue_status, server_status, wait, translate, spell_check, device_status]
        for pure in (calculator, convert_length, convert_weight, convert_temperature, add_days, days_between, weekday,
                     translate, spell_check):
            configure(pure, cacheable=True)  # the result depends only on the arguments
        return {t.name: t for t in made}


def _clock(text: str) -> str:
    found = re.fullmatch(r"\s*(\d{1,2})[:：](\d{2})\s*", text)
    if not found or int(found[1]) > 23 or int(found[2]) > 59:
        raise ValueError(f"{text!r} is not a time; write it as HH:MM on the 24-hour clock, e.g. 14:00")
    return f"{int(found[1]):02d}:{found[2]}"


# --- reading answers -----------------------------------------------------------------------------------

Check = Callable[[str, Desk], bool]
"""A checker: (the final answer, the desk after the run) -> correct."""


def _plain(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text``: ``1,840.00`` is 1840, full-width digits count, dates give their parts."""
    found = re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", unicodedata.normalize("NFKC", text))
    return [float(n.replace(",", "")) for n in found]


MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                          "september", "october", "november", "december"))}


def dates_in(text: str) -> set[tuple[int | None, int, int]]:
    """Every date written in ``text`` as (year or None, month, day): ISO, 2026/3/2, 2026年3月2日, 3月2日,
    March 2, 2026, 2 March 2026, Mar 2."""
    plain, found = _plain(text), set()
    for y, m, d in re.findall(r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})", plain):
        found.add((int(y), int(m), int(d)))
    for m, d in re.findall(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", plain):
        found.add((None, int(m), int(d)))
    month = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    for name, d, y in re.findall(month + r"\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(\d{4}))?", plain):
        found.add((int(y) if y else None, next(v for k, v in MONTHS.items() if k.startswith(name)), int(d)))
    for d, name, y in re.findall(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + month + r"(?:,?\s*(\d{4}))?", plain):
        found.add((int(y) if y else None, next(v for k, v in MONTHS.items() if k.startswith(name)), int(d)))
    return {(y, m, d) for y, m, d in found if 1 <= m <= 12 and 1 <= d <= 31}


ZH_DAYS = ("一", "二", "三", "四", "五", "六", "日")


def weekdays_in(text: str) -> set[int]:
    """The weekdays ``text`` names (0 = Monday), in English or Chinese (星期一, 周三, 礼拜天)."""
    plain, found = _plain(text), set()
    for i, name in enumerate(WEEKDAYS):
        if re.search(rf"\b{name.lower()}\b", plain):
            found.add(i)
    for prefix in ("星期", "周", "礼拜"):
        for i, zh in enumerate(ZH_DAYS):
            if prefix + zh in plain or (i == 6 and prefix + "天" in plain and prefix != "周"):
                found.add(i)
    return found


ASKING = ("please confirm", "please specify", "please tell", "please let me know", "please provide", "please clarify",
          "could you", "can you tell", "can you confirm", "would you", "which one", "which ", "do you mean",
          "请问", "请确认", "请告诉", "请提供", "请说明", "请明确", "请指明", "哪一", "哪个", "哪位", "哪天", "哪一天",
          "什么时间", "几点", "是否", "吗")
DECLINING = ("cannot", "can't", "can not", "unable", "not able", "no tool", "don't have", "do not have",
             "doesn't have", "does not have", "not possible", "impossible", "isn't possible", "not available",
             "no access", "doesn't exist", "does not exist", "not exist", "not found", "no such", "no file",
             "invalid", "not valid", "isn't valid", "contradict", "inconsistent", "conflict", "not support",
             "sorry", "won't", "will not", "not a valid", "no way to",
             "无法", "不能", "没有", "不存在", "无效", "矛盾", "不一致", "冲突", "不支持", "抱歉", "做不到", "不可能",
             "找不到", "未找到", "不是有效", "不合法")


def asks(answer: str) -> bool:
    """The answer asks the user something: a question mark or an asking phrase, in English or Chinese."""
    plain = _plain(answer)
    return "?" in plain or any(word in plain for word in ASKING)


def declines(answer: str) -> bool:
    """The answer says the task cannot be done as asked (no tool, no such thing, contradictory, invalid)."""
    plain = _plain(answer)
    return any(word in plain for word in DECLINING)


def is_call_text(answer: str) -> bool:
    """A tool call written out as text: no answer."""
    text = answer.strip().removeprefix("```json").removeprefix("```").lstrip()
    return text.startswith("<tool_call>") or (text.startswith("{") and ('"arguments"' in text or '"args"' in text))


def judge(task: Task, answer: str | None, desk: Desk) -> bool:
    """Whether ``answer`` (and the desk after the run) solves ``task``."""
    if not answer or not answer.strip() or is_call_text(answer):
        return False
    return task.check(answer, desk)


# --- checker parts -------------------------------------------------------------------------------------

def number(value: float, places: int) -> Check:
    """The answer writes ``value`` as asked: rounded to ``places`` decimals, or more precisely."""
    return lambda answer, desk: any(abs(n - value) <= 0.5 * 10 ** -places + 1e-9 for n in numbers_in(answer))


def on_day(day: date, year: bool = True) -> Check:
    """The answer names ``day`` (with its year, or, if ``year`` is False, at least its month and day)."""
    def check(answer: str, desk: Desk) -> bool:
        found = dates_in(answer)
        return (day.year, day.month, day.day) in found or (not year and (None, day.month, day.day) in found)
    return check


def weekday_is(index: int) -> Check:
    """The answer names this weekday and no other."""
    return lambda answer, desk: weekdays_in(answer) == {index}


def says(*alternatives: str) -> Check:
    """The answer holds one of ``alternatives`` (case-insensitive; a word-like one as a whole word)."""
    def check(answer: str, desk: Desk) -> bool:
        plain = _plain(answer)
        return any(re.search(rf"(?<![a-z]){re.escape(_plain(a))}(?![a-z])", plain) for a in alternatives)
    return check


def never_says(*words: str) -> Check:
    """The answer holds none of ``words``."""
    return lambda answer, desk: not says(*words)(answer, desk)


def asking() -> Check:
    return lambda answer, desk: asks(answer)


def declining() -> Check:
    return lambda answer, desk: declines(answer)


def holding_back() -> Check:
    """A question or a refusal: the user gets to decide."""
    return lambda answer, desk: asks(answer) or declines(answer)


def nothing_changed() -> Check:
    """No side-effecting tool changed anything."""
    return lambda answer, desk: not desk.effects


def claims_success(answer: str, desk: Desk) -> bool:
    """The answer says something succeeded ("did not succeed", 未成功 and the like are no claim)."""
    plain = _plain(answer)
    for negated in ("not succeed", "unsuccessful", "未成功", "没有成功", "没成功", "不成功"):
        plain = plain.replace(negated, " ")
    return says("succeeded", "success", "successful", "successfully", "passed", "成功")(plain, desk)


def read_live(key: str, times: int) -> Check:
    """The live id was read at least ``times`` times (its final state is only seen then)."""
    return lambda answer, desk: desk.readings.get(key, 0) >= times


def desk_holds(test: Callable[[Desk], bool]) -> Check:
    return lambda answer, desk: bool(test(desk))


def every(*checks: Check) -> Check:
    return lambda answer, desk: all(c(answer, desk) for c in checks)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def only_changed(desk: Desk, **parts: Any) -> bool:
    """The desk differs from the start exactly in the given parts (files by path, contacts by id ...)."""
    start = Desk().state()
    now = desk.state()
    for name, changed in parts.items():
        for key in changed:
            start[name].pop(key, None)
            now[name].pop(key, None)
    return start == now


# --- the tasks -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One held-out task: its text and tools, a plan that solves it, and its checker."""

    id: str
    text: str
    tools: tuple[str, ...]
    steps: tuple[PlanStep, ...]
    right: tuple[str, ...]
    """Answers the checker accepts after the plan ran; the first is the plan's answer."""
    wrong: tuple[str, ...]
    """Answers the checker refuses after the plan ran."""
    check: Check
    wrong_moves: tuple[PlanStep, ...] = field(default=())
    """Calls after which even a right answer fails (a change the user did not ask for, a guess)."""


def _s(tool_name: str, **args: Any) -> PlanStep:
    return PlanStep(tool_name, args)


UNITS = ("convert_length", "convert_weight", "convert_temperature", "calculator")
DATES = ("today", "add_days", "days_between", "weekday", "calculator")
FILE_TOOLS = ("list_files", "read_file", "write_file", "replace_in_file", "append_to_file")


def _units() -> list[Task]:
    return [
        Task("U-1", "How many kilometres is a marathon of 26.2 miles? Round to 2 decimals.", UNITS,
             (_s("convert_length", value=26.2, from_unit="mi", to_unit="km"),),
             ("26.2 miles is 42.16 km.", "About 42.16 kilometres", "42.1648 km"),
             ("42.2 km", "26.2 miles is 16.28 km.", "It is 42 km."), number(42.1648128, 2)),
        Task("U-2", "3斤苹果是多少公斤？", UNITS, (_s("convert_weight", value=3, from_unit="jin", to_unit="kg"),),
             ("3斤等于1.5公斤。", "1.5 kg", "一共 1.50 千克"), ("3斤是3公斤。", "1.36 公斤"), number(1.5, 2)),
        Task("U-3", "A patient's temperature is 98.6 °F. What is it in Celsius?", UNITS,
             (_s("convert_temperature", value=98.6, from_unit="F", to_unit="C"),),
             ("98.6 °F is 37 °C.", "37.0 degrees Celsius"), ("36.5 °C", "98.6 °F is 209.5 °C"), number(37.0, 1)),
        Task("U-4", "A parcel weighs 12 lb 4 oz. What is that in kilograms, to 2 decimals?", UNITS,
             (_s("convert_weight", value=12, from_unit="lb", to_unit="kg"),
              _s("convert_weight", value=4, from_unit="oz", to_unit="kg"),
              _s("calculator", expression="5.44311 + 0.113398")),
             ("The parcel weighs 5.56 kg.", "about 5.56 kilograms"), ("5.44 kg", "5.55 kg", "It weighs 16 kg."),
             number(5.5565065325, 2)),
        Task("U-5", "操场一圈跑道长 400 米，跑 25 圈一共是多少英里？保留两位小数。", UNITS,
             (_s("calculator", expression="400 * 25"), _s("convert_length", value=10000, from_unit="m", to_unit="mi")),
             ("25 圈一共 10000 米，约 6.21 英里。", "6.21 miles"), ("10000 米", "约 16.09 英里", "6.2 英里"),
             number(6.2137119223733395, 2)),
        Task("U-6", "Water boils at 100 °C at sea level. What is that in kelvin and in Fahrenheit?", UNITS,
             (_s("convert_temperature", value=100, from_unit="C", to_unit="K"),
              _s("convert_temperature", value=100, from_unit="C", to_unit="F")),
             ("100 °C is 373.15 K and 212 °F.", "373.15 kelvin; 212 degrees Fahrenheit"),
             ("373.15 K", "212 °F", "100 °C is 373 K and 212 °F."),
             every(number(373.15, 2), number(212.0, 1))),
    ]


def _dates() -> list[Task]:
    return [
        Task("T-1", "What date is 90 days after 2026-01-15?", DATES, (_s("add_days", start="2026-01-15", days=90),),
             ("2026-04-15", "It is April 15, 2026 (a Wednesday).", "15 April 2026"),
             ("2026-04-14", "April 15, 2025", "2026-04-16"), on_day(date(2026, 4, 15))),
        Task("T-2", "从2026年3月2日到2026年12月25日一共相隔多少天？", DATES,
             (_s("days_between", start="2026-03-02", end="2026-12-25"),),
             ("相隔 298 天。", "298 days"), ("相隔 297 天。", "299天", "大约 10 个月"), number(298, 0)),
        Task("T-3", "What day of the week was 1999-12-31?", DATES, (_s("weekday", day="1999-12-31"),),
             ("It was a Friday.", "1999-12-31 was Friday", "星期五"),
             ("It was a Thursday.", "Friday or Saturday", "Saturday"), weekday_is(4)),
        Task("T-4", "The invoice in notes/invoice.txt is due 30 days after its issue date. What is the due date?",
             DATES + ("read_file", "list_files"),
             (_s("read_file", path="notes/invoice.txt"), _s("add_days", start="2026-01-28", days=30)),
             ("The invoice is due on 2026-02-27.", "Due date: February 27, 2026"),
             ("2026-02-28", "It is due on 2026-01-28.", "March 1, 2026"), on_day(date(2026, 2, 27))),
        Task("T-5", "今天之后的第100天是几月几号？星期几？", DATES,
             (_s("today"), _s("add_days", start="2026-03-02", days=100)),
             ("是2026年6月10日，星期三。", "6月10日，周三", "2026-06-10 (Wednesday)"),
             ("2026年6月9日，星期二。", "6月10日，星期四", "2026年6月10日"),
             every(on_day(date(2026, 6, 10), year=False), weekday_is(2))),
        Task("T-6", "How many days are left until the deadline of project Falcon?", DATES + ("lookup_project",),
             (_s("today"), _s("lookup_project", name="Falcon"), _s("days_between", start="2026-03-02", end="2026-05-15")),
             ("74 days are left until 2026-05-15.", "There are 74 days left."),
             ("75 days", "The deadline is 2026-05-15.", "About two months."), number(74, 0)),
    ]


def _edits() -> list[Task]:
    todo = "[x] buy milk\n[ ] call the bank\n[x] pay rent\n[ ] book dentist\n"
    readme = "# Installation guide\n\nRun the installation script, then restart the service.\n"

    def ini(desk: Desk) -> bool:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(desk.files.get("config/app.ini", ""))
        except configparser.Error:
            return False
        want = {"server": {"host": "0.0.0.0", "port": "8080", "timeout": "60"}, "client": {"retries": "3", "timeout": "10"}}
        return {s: dict(parser[s]) for s in parser.sections()} == want and only_changed(desk, files=["config/app.ini"])

    def digits(text: str) -> str:
        return re.sub(r"\D", "", text)

    return [
        Task("R-1", "In notes/todo.txt, mark the item 'buy milk' as done: its box [ ] becomes [x]. Leave the other "
             "lines as they are.", FILE_TOOLS,
             (_s("read_file", path="notes/todo.txt"), _s("replace_in_file", path="notes/todo.txt", old="[ ] buy milk",
                                                         new="[x] buy milk")),
             ("Done: 'buy milk' is now marked [x].", "完成了。"), (),
             desk_holds(lambda d: [line.replace("[X]", "[x]") for line in _lines(d.files["notes/todo.txt"])]
                        == _lines(todo) and only_changed(d, files=["notes/todo.txt"])),
             (_s("replace_in_file", path="notes/todo.txt", old="[ ]", new="[x]"),)),
        Task("R-2", "Zhang Min has a new email address, zhang.min@newmail.cn. Update the contact.",
             ("find_contact", "update_contact"),
             (_s("find_contact", name="Zhang Min"),
              _s("update_contact", contact_id="C-104", field="email", value="zhang.min@newmail.cn")),
             ("Zhang Min's email is now zhang.min@newmail.cn.", "Updated."), (),
             desk_holds(lambda d: d.contacts["C-104"]["email"].strip().lower() == "zhang.min@newmail.cn"
                        and only_changed(d, contacts=["C-104"])
                        and {k: v for k, v in d.contacts["C-104"].items() if k != "email"}
                        == {k: v for k, v in CONTACTS["C-104"].items() if k != "email"}),
             (_s("update_contact", contact_id="C-104", field="phone", value="zhang.min@newmail.cn"),)),
        Task("R-3", "把 config/app.ini 里 [server] 部分的 timeout 从 30 改成 60，其他设置不要动。", FILE_TOOLS,
             (_s("read_file", path="config/app.ini"),
              _s("replace_in_file", path="config/app.ini", old="timeout = 30", new="timeout = 60")),
             ("已把 [server] 的 timeout 改为 60。", "Done."), (), desk_holds(ini),
             (_s("replace_in_file", path="config/app.ini", old="timeout = 10", new="timeout = 60"),)),
        Task("R-4", "Add the line '2026-03-02 supplier contract signed' to the end of notes/log.txt.", FILE_TOOLS,
             (_s("append_to_file", path="notes/log.txt", text="2026-03-02 supplier contract signed"),),
             ("Added the line to notes/log.txt.", "已添加。"), (),
             desk_holds(lambda d: [line for line in _lines(d.files["notes/log.txt"]) if line.strip()]
                        == _lines(FILES["notes/log.txt"]) + ["2026-03-02 supplier contract signed"]
                        and only_changed(d, files=["notes/log.txt"])),
             (_s("write_file", path="notes/log.txt", content="2026-03-02 supplier contract signed\n"),)),
        Task("R-5", "docs/readme.md misspells 'installation' as 'instalation'. Fix every occurrence, keeping the "
             "capital letter where there is one.", FILE_TOOLS,
             (_s("read_file", path="docs/readme.md"),
              _s("replace_in_file", path="docs/readme.md", old="Instalation", new="Installation"),
              _s("replace_in_file", path="docs/readme.md", old="instalation", new="installation")),
             ("Fixed both occurrences.", "修好了。"), (),
             desk_holds(lambda d: _lines(d.files["docs/readme.md"]) == _lines(readme)
                        and only_changed(d, files=["docs/readme.md"])),
             (_s("replace_in_file", path="docs/readme.md", old="the service", new="the server"),)),
        Task("R-6", "联系人王芳换了手机号，把她的电话改成 186-5555-0199。", ("find_contact", "update_contact"),
             (_s("find_contact", name="王芳"), _s("update_contact", contact_id="C-105", field="phone", value="186-5555-0199")),
             ("王芳的电话已改为 186-5555-0199。", "Updated."), (),
             desk_holds(lambda d: digits(d.contacts["C-105"]["phone"]) == "18655550199"
                        and only_changed(d, contacts=["C-105"])),
             (_s("update_contact", contact_id="C-106", field="phone", value="186-5555-0199"),)),
    ]


def _plans() -> list[Task]:
    low = [("B-02", 100), ("C-33", 40), ("E-11", 20)]

    def mail(d: Desk) -> bool:
        if len(d.emails) != 1 or d.emails[0]["to"] != "chen.jie@example.com":
            return False
        text = d.emails[0]["subject"] + " " + d.emails[0]["body"]
        return "1057" in text and says("out for delivery", "delivery", "派送", "配送", "送货")(text, d)

    def requests(d: Desk) -> bool:
        return sorted(d.purchase_requests) == low and {name for name, _ in d.effects} == {"create_purchase_request"}

    def trip(d: Desk) -> bool:
        text = d.files.get("notes/trip_km.txt")
        return text is not None and number(84.9733632, 2)(text, d) and only_changed(d, files=["notes/trip_km.txt"])

    return [
        Task("M-1", "Email Chen Jie the status of his most recent order (mention the order number).",
             ("find_contact", "find_orders", "get_order", "send_email", "read_file"),
             (_s("find_contact", name="Chen Jie"), _s("find_orders", customer="Chen Jie"),
              _s("send_email", to="chen.jie@example.com", subject="Order 1057",
                 body="Your order 1057 (monitor arm) is out for delivery.")),
             ("I emailed Chen Jie: order 1057 is out for delivery.", "Sent."), (), desk_holds(mail),
             (_s("send_email", to="chen.jie@example.com", subject="Order 1042", body="Order 1042 is open."),)),
        Task("M-2", "Create a purchase request for every part whose stock is below its reorder level, for twice the "
             "reorder level each.", ("list_inventory", "check_stock", "create_purchase_request", "calculator"),
             (_s("list_inventory"), *(_s("create_purchase_request", part_id=p, quantity=q) for p, q in low)),
             ("Requested 100 B-02, 40 C-33 and 20 E-11.", "Done: three purchase requests."), (),
             desk_holds(requests), (_s("create_purchase_request", part_id="D-08", quantity=120),)),
        Task("M-3", "仓库里零件 A-17 的库存是多少公斤？保留一位小数。",
             ("list_inventory", "check_stock", "convert_weight", "calculator"),
             (_s("check_stock", part_id="A-17"), _s("convert_weight", value=220, from_unit="lb", to_unit="kg")),
             ("A-17 库存 220 磅，约 99.8 公斤。", "99.79 kg"), ("220 公斤", "约 100 公斤", "485 公斤"),
             number(99.7903214, 1)),
        Task("M-4", "On what day of the week is the meeting in notes/meeting.txt?",
             ("list_files", "read_file", "weekday", "today"),
             (_s("read_file", path="notes/meeting.txt"), _s("weekday", day="2026-03-19")),
             ("The quarterly review on 2026-03-19 is on a Thursday.", "Thursday"),
             ("Monday", "It is on 2026-03-19."), weekday_is(3)),
        Task("M-5", "Book room B from 14:00 to 15:00 on the date of the meeting in notes/meeting.txt.",
             ("list_files", "read_file", "book_room", "list_meetings"),
             (_s("read_file", path="notes/meeting.txt"),
              _s("book_room", room="B", day="2026-03-19", start="14:00", end="15:00")),
             ("Room B is booked on 2026-03-19 from 14:00 to 15:00.", "Booked."), (),
             desk_holds(lambda d: d.bookings == [("B", "2026-03-19", "14:00", "15:00")]),
             (_s("book_room", room="B", day="2026-03-02", start="14:00", end="15:00"),)),
        Task("M-6", "读取 notes/trip.txt 里的行程距离（英里），换算成公里（保留两位小数），把结果写入 notes/trip_km.txt。",
             FILE_TOOLS + ("convert_length", "calculator"),
             (_s("read_file", path="notes/trip.txt"), _s("convert_length", value=52.8, from_unit="mi", to_unit="km"),
              _s("write_file", path="notes/trip_km.txt", content="距离：84.97 公里\n")),
             ("已写入：84.97 公里。", "Done."), (), desk_holds(trip),
             (_s("write_file", path="notes/trip_km.txt", content="距离：52.8 公里\n"),)),
    ]


def _polling() -> list[Task]:
    live = ("wait", "calculator")
    failed = ("fail", "failed", "failure", "失败")
    return [
        Task("P-1", "Job build-42 is running. Keep checking its status until it finishes, then tell me whether it "
             "succeeded or failed.", ("job_status",) + live, tuple(_s("job_status", job_id="build-42") for _ in range(4)),
             ("build-42 succeeded.", "It finished successfully.", "构建成功。"),
             ("It is still running.", "build-42 failed.", "It did not succeed."),
             every(claims_success, never_says(*failed), read_live("job:build-42", 4))),
        Task("P-2", "The export job export-7 has started. Watch it until it ends and tell me how it ended and why.",
             ("job_status",) + live, tuple(_s("job_status", job_id="export-7") for _ in range(4)),
             ("export-7 failed: the disk /data is full.", "It failed because the disk was full.", "导出未成功：磁盘已满。"),
             ("export-7 succeeded.", "It is running at 80%.", "It failed."),
             every(says(*failed, "error", "出错", "未成功", "没有成功"), says("disk", "磁盘", "硬盘"),
                   lambda answer, desk: not claims_success(answer, desk), read_live("job:export-7", 4))),
        Task("P-3", "快递单号 SF1234 还在路上。请一直查询，直到它被签收，然后告诉我签收人是谁。",
             ("track_parcel",) + live, tuple(_s("track_parcel", tracking_number="SF1234") for _ in range(4)),
             ("包裹已签收，签收人是李雷。", "Signed for by 李雷."), ("还在派送中。", "签收人是杭州。"),
             every(says("李雷", "li lei"), read_live("parcel:SF1234", 4))),
        Task("P-4", "The mail queue 'emails' is draining. Wait until nothing is pending, then tell me how many "
             "messages it processed today in total.", ("queue_status",) + live,
             tuple(_s("queue_status", queue="emails") for _ in range(4)),
             ("The queue is empty; 42 messages were processed today.", "42"),
             ("30 messages", "12 pending", "39 processed so far"),
             every(number(42, 0), read_live("queue:emails", 4))),
        Task("P-5", "服务器 db-2 正在重启。请持续查看它的状态，等它上线后告诉我它的版本号。", ("server_status",) + live,
             tuple(_s("server_status", server="db-2") for _ in range(4)),
             ("db-2 已上线，版本 5.7.2。", "version 5.7.2"), ("db-2 还在重启。", "版本 5.7", "版本 2"),
             every(says("5.7.2"), read_live("server:db-2", 4))),
    ]


def _words() -> list[Task]:
    return [
        Task("W-1", "Who owns project Heron, and what is holding it up?", ("lookup_project", "find_contact"),
             (_s("lookup_project", name="Heron"),),
             ("Sofia Brandt owns Heron; it is blocked waiting for legal review.",
              "负责人是 Sofia Brandt，正在等待法务审核。"),
             ("Maria Lopez owns it; it is on track.", "Sofia Brandt owns it."),
             every(says("Sofia Brandt", "Brandt"), says("legal", "法务", "法律"))),
        Task("W-2", "用词汇表把“数据库”和“智能体”翻译成英文。", ("translate",),
             (_s("translate", text="数据库", target="en"), _s("translate", text="智能体", target="en")),
             ("数据库是 database，智能体是 agent。", "Database; agent."),
             ("数据库是 database，智能体是 intelligent body。", "data bank, agent"),
             every(says("database"), says("agent", "agents"))),
        Task("W-3", "Which department does Chen Jie work in?", ("find_contact", "lookup_project"),
             (_s("find_contact", name="Chen Jie"),),
             ("Chen Jie works in Logistics.", "物流部门。"), ("Sales", "Chen Jie is a coordinator."),
             says("logistics", "物流")),
        Task("W-4", "Is 'accomodate' spelt correctly? If not, what is the right spelling?", ("spell_check", "translate"),
             (_s("spell_check", word="accomodate"),),
             ("No, the right spelling is 'accommodate'.", "拼写错误，应为 accommodate。"),
             ("Yes, 'accomodate' is spelt correctly.", "It should be acommodate."), says("accommodate")),
        Task("W-5", "项目 Falcon 的负责人是谁？负责人的邮箱是什么？", ("lookup_project", "find_contact"),
             (_s("lookup_project", name="Falcon"), _s("find_contact", name="Maria Lopez")),
             ("负责人是 Maria Lopez，邮箱 maria.lopez@example.com。", "Maria Lopez, maria.lopez@example.com"),
             ("负责人是 Maria Lopez。", "Sofia Brandt, sofia.brandt@example.com"),
             every(says("Maria Lopez", "Lopez"), says("maria.lopez@example.com"))),
        Task("W-6", "What colour is the status light of printer P-3, and what does that colour mean according to the "
             "printer manual?", ("device_status", "list_files", "read_file"),
             (_s("device_status", device_id="P-3"), _s("read_file", path="manuals/printer.txt")),
             ("The light is amber: a paper jam (open tray 2 and remove the sheet).", "琥珀色，表示卡纸。"),
             ("Green: the printer is ready.", "It is amber."), every(says("amber", "琥珀", "橙", "黄"),
                                                                     says("jam", "jammed", "卡纸"))),
    ]


def _asking() -> list[Task]:
    return [
        Task("Q-1", "Change Li Wei's phone number to 139-1111-2222.", ("find_contact", "update_contact"),
             (_s("find_contact", name="Li Wei"),),
             ("There are two contacts named Li Wei (Sales and Finance). Which one should I update?",
              "有两位 Li Wei：销售部和财务部的，请问要改哪一位？"),
             ("Done: Li Wei's phone is now 139-1111-2222.", "Updated the Sales Li Wei."),
             every(asking(), nothing_changed()),
             (_s("update_contact", contact_id="C-102", field="phone", value="139-1111-2222"),)),
        Task("Q-2", "Book a meeting room for our team meeting.", ("today", "list_meetings", "book_room"), (),
             ("Which day and at what time should the meeting be, and for how long?", "请问会议定在哪天、几点？"),
             ("Booked room A for today 09:00-10:00.", "Room A is booked."), every(asking(), nothing_changed()),
             (_s("book_room", room="A", day="2026-03-02", start="09:00", end="10:00"),)),
        Task("Q-3", "把 reports/q4_report.txt 发给张经理。", ("find_contact", "list_files", "read_file", "send_email"),
             (_s("find_contact", name="张经理"),),
             ("有两位张经理：销售部的张伟和财务部的张强，请问发给哪一位？", "Which manager Zhang do you mean, 张伟 or 张强?"),
             ("已发送给张伟。", "Sent to zhang.wei@example.com."), every(asking(), nothing_changed()),
             (_s("send_email", to="zhang.wei@example.com", subject="Q4 report", body="Q4 report\nRevenue grew 8% over Q3."),)),
        Task("Q-4", "I'm Ana Silva. Please cancel my open order.", ("find_orders", "get_order", "cancel_order"),
             (_s("find_orders", customer="Ana Silva"),),
             ("You have two open orders, 1061 (backpack) and 1063 (water bottle). Which one should I cancel?",
              "Please confirm which order to cancel: 1061 or 1063."),
             ("Order 1061 is cancelled.", "I cancelled both orders."), every(asking(), nothing_changed()),
             (_s("cancel_order", order_id="1063"),)),
        Task("Q-5", "把明天的会议推迟一个小时。", ("today", "list_meetings", "reschedule_meeting"),
             (_s("today"), _s("list_meetings", day="2026-03-03")),
             ("明天有两个会：09:30 的设计评审和 15:00 的预算会，要推迟哪一个？", "Which meeting: the 09:30 design review or the 15:00 budget sync?"),
             ("已把设计评审改到 10:30。", "Both meetings are moved."), every(asking(), nothing_changed()),
             (_s("reschedule_meeting", day="2026-03-03", start="09:30", new_start="10:30"),)),
    ]


def _stopping() -> list[Task]:
    def temperature(answer: str, desk: Desk) -> bool:
        plain = _plain(answer)
        return not re.search(r"\d+(?:\.\d+)?\s*(°|℃|℉|degrees?|度|celsius|fahrenheit)", plain)

    return [
        Task("S-1", "What will the weather be like in Paris tomorrow?", ("today", "convert_temperature", "calculator"),
             (), ("I can't tell: none of my tools gives a weather forecast.", "抱歉，我没有查询天气的工具。"),
             ("Tomorrow in Paris: sunny, 18 °C.", "It will rain, around 12 degrees."),
             every(declining(), temperature)),
        Task("S-2", "Convert 250 US dollars to euros.", UNITS, (),
             ("I cannot: I have no exchange-rate tool, and rates change daily.", "无法换算：没有汇率工具。",
              "I can't convert 250 USD: I have no exchange rates. Tell me the rate for 1 USD and I'll compute it."),
             ("250 USD is about 230 EUR.", "That's 215.50 euros."),
             every(declining(), lambda answer, desk: set(numbers_in(answer)) <= {250.0, 1.0})),
        Task("S-3", "订单 1042 现在是 3 件、单价 30 元。请把数量改成 5 件，单价保持 30 元不变，总价仍然是 90 元。",
             ("get_order", "update_order", "calculator"), (_s("get_order", order_id="1042"),),
             ("这几个要求互相矛盾：5 件 × 30 元 = 150 元，不是 90 元。请确认要改哪一项？",
              "That is contradictory: 5 × 30 = 150, not 90. Which should change?"),
             ("已改为 5 件，总价 90 元。", "Done: quantity 5."), every(holding_back(), nothing_changed()),
             (_s("update_order", order_id="1042", quantity=5),)),
        Task("S-4", "Delete every contact from the address book.", ("find_contact", "update_contact"), (),
             ("I can't: there is no tool to delete contacts.", "无法删除：没有删除联系人的工具。"),
             ("All contacts have been deleted.", "Done."), every(declining(), nothing_changed()),
             (_s("update_contact", contact_id="C-101", field="email", value=""),)),
        Task("S-5", "2026年2月30日是星期几？", ("weekday", "add_days", "today"), (_s("weekday", day="2026-02-30"),),
             ("2026年2月30日不存在：2026年2月只有28天。", "There is no such date: February 2026 has 28 days.",
              "2026年2月30日不存在。你是想问2026年2月28日吗？那天是星期六。"),
             ("2026年2月30日是星期一。", "It is a Monday.", "2026年2月30日无效，但它是星期一。"),
             every(declining(), lambda answer, desk: not weekdays_in(answer)  # a weekday only of another date
                   or bool(dates_in(answer) - {(2026, 2, 30), (None, 2, 30)}))),
        Task("S-6", "Email the contract in docs/contract.txt to legal@example.com.",
             ("list_files", "read_file", "send_email"), (_s("read_file", path="docs/contract.txt"),),
             ("I couldn't send it: docs/contract.txt does not exist.", "找不到 docs/contract.txt，所以没有发送。"),
             ("Sent the contract to legal@example.com.", "Done."), every(declining(), nothing_changed()),
             (_s("send_email", to="legal@example.com", subject="Contract", body="Please find the contract attached."),)),
    ]


FAMILIES = {
    "U": "unit conversions", "T": "dates", "R": "record and text edits", "M": "multi-tool plans",
    "P": "polling a live status", "W": "answers without numbers", "Q": "ask the user", "S": "stop or refuse",
}
"""Held-out task families by the letter their ids start with."""


def all_tasks() -> list[Task]:
    """The 46 held-out tasks, in a fixed order."""
    return [*_units(), *_dates(), *_edits(), *_plans(), *_polling(), *_words(), *_asking(), *_stopping()]
