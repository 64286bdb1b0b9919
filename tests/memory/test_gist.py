"""A long result cut to the lines nearest the task: the figures a task asks for survive every bound."""

from __future__ import annotations

from langchain_core.tools import tool

from reinloop import Limits, build_graph
from reinloop.protocols.answers import AnswerRules
from reinloop.tools.gist import gist, terms
from reinloop.protocols.memory.ledger import in_hand
from reinloop.testing import ScriptedChatModel, prompt_text, tool_call

FILLER = ("The city government publishes these figures every spring in its statistical yearbook; the numbers "
          "below are the ones used throughout this handbook. 本手册中的数字均以年鉴为准，引用时请注明年份。")
CITY = "\n".join([
    "- docs/city_hangzhou.md — 杭州 Hangzhou", "# 杭州 Hangzhou", "", f"杭州（Hangzhou）位于浙江。{FILLER}", "",
    "- 常住人口 (resident population): 1252 万人 (12,520,000 people)", "- 面积 (area): 16850 平方公里 (km²)",
    "- 地区生产总值 (GDP): 20059 亿元", "- 著名景点 (landmark): 西湖", FILLER, FILLER])
TASK = "杭州的人口密度是多少？（人/平方公里，四舍五入取整）"


def test_chinese_text_is_weighed_by_character_pairs_and_english_by_words():
    assert {"杭州", "人口", "密度", "平方", "公里"} <= terms(TASK)
    assert terms("Resident population: 12,520,000") == {"resident", "population", "12520000"}


def test_a_long_result_keeps_the_lines_sharing_the_tasks_words_in_their_order():
    cut = gist(CITY, TASK, 300)
    assert len(cut) <= 300
    assert "1252 万人" in cut and "16850 平方公里" in cut
    assert cut.index("1252") < cut.index("16850") and "yearbook" not in cut
    assert " … " in cut  # where lines were left out


def test_a_result_that_fits_is_whole_and_one_sharing_nothing_is_cut_from_its_head():
    assert gist("4", TASK, 300) == "4"
    cut = gist(FILLER * 5, "杭州 人口", 100)
    assert len(cut) <= 100 and cut.startswith("The city government") and cut.endswith("…")


def test_one_long_line_is_cut_whatever_it_shares_with_the_focus():
    line = "page 3: lorem   ipsum dolor sit amet " * 40  # one line, no line to choose: it is cut, not weighed
    assert gist(line, "read page 3", 100) == gist(line, "nothing shared", 100) == " ".join(line.split())[:99] + "…"


def city_search_run(*, answers: AnswerRules | None = None, replies=None):
    @tool
    def search_docs(query: str) -> str:
        """Search the handbook."""
        return CITY

    search = [tool_call("search_docs", {"query": "杭州"})]
    model = ScriptedChatModel(replies=replies or [search, search, search, search, "743"])
    graph = build_graph(model, [search_docs], answers=answers, limits=Limits(max_steps=8, max_repeats=3))
    return graph.invoke({"task": TASK}), model


def test_the_repeat_hint_shows_the_figures_of_a_long_result_not_its_opening_boilerplate():
    out, model = city_search_run()
    hint = next(m for m in prompt_text(model.prompts[2]).split("\n\n") if "You already did this" in m)
    assert "1252 万人" in hint and "16850 平方公里" in hint


def test_a_wrap_up_and_the_outcome_keep_the_figures_of_a_long_result():
    search = [tool_call("search_docs", {"query": "杭州"})]
    out, model = city_search_run(answers=AnswerRules(wrap_up=True), replies=[search, search, search, "743"])
    wrap_up = prompt_text(model.prompts[-1])
    assert "Give the final answer to the task now" in wrap_up
    assert "1252 万人" in wrap_up and "16850 平方公里" in wrap_up
    assert out["answer"] == "743"
    out, _ = city_search_run(replies=[search, search, search])  # no wrap-up: the run breaks, results in hand
    (kept,) = in_hand(out)
    assert "1252 万人" in kept["observation"] and "16850 平方公里" in kept["observation"]


def test_a_short_first_line_is_kept_so_the_gist_says_which_file_its_figures_are_from():
    sheet = "- docs/product_pulsar.md — Pulsar 充电线\n" + "boilerplate text here\n" * 30 + "- 售价 (price): 199 元\n"
    kept = gist(sheet, "Aurora X1 智能手表的售价是多少", 120)
    assert kept.startswith("- docs/product_pulsar.md — Pulsar 充电线") and "199 元" in kept
    long_head = "x" * 100 + "\n" + "filler\n" * 30 + "售价: 199\n"
    assert not gist(long_head, "售价", 120).startswith("x")  # a first line over a third of the room is not kept
