"""search_docs: an incremental FTS5 index over a folder, bm25-ranked, with snippets."""

from __future__ import annotations

import os
import time

import pytest

from reinloop.errors import ConfigurationError
from reinloop.tools import DocsIndex, builtin, builtins, run_tool
from reinloop.tools.docs import fts_query, has_fts5


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "refunds.md").write_text("# Refund policy\n\nRefunds are paid within 14 days of the return.\n", encoding="utf-8")
    (docs / "guide" / "shipping.txt").write_text("Shipping\nParcels leave the warehouse daily. Refunds: see the refund policy.\n", encoding="utf-8")
    (docs / "weather.md").write_text("# 杭州天气\n\n杭州今天多云，气温22度。北京晴。\n", encoding="utf-8")
    for i, topic in enumerate(["apples", "boats", "clocks", "dogs", "engines", "ferns", "glass", "harbours"]):
        (docs / f"note-{i}.txt").write_text(f"Notes on {topic}\nA short note about {topic} and nothing else.\n", encoding="utf-8")
    (docs / "image.png").write_bytes(b"\x89PNG refund")  # not a text file: not indexed
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "secret.md").write_text("refund secret", encoding="utf-8")
    return docs


def test_this_python_has_fts5():
    assert has_fts5()


def test_search_ranks_with_bm25_and_shows_snippets(folder, tmp_path):
    index = DocsIndex(folder, tmp_path / "index.db")
    stats = index.update()
    assert (stats.added, stats.updated, stats.removed) == (11, 0, 0)
    hits = index.search("refund policy")
    assert [h.path for h in hits] == ["refunds.md", "guide/shipping.txt"]  # the title hit ranks first
    assert hits[0].title == "Refund policy"
    assert "[Refunds] are paid within 14 days" in hits[0].snippet
    assert hits[0].score > hits[1].score > 0


def test_files_matching_only_words_most_files_have_are_left_out_unless_nothing_else_matches(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for city, area in (("北京", 16410), ("上海", 6341), ("杭州", 16850), ("成都", 14335)):
        (docs / f"{city}.md").write_text(f"# {city}\n\n面积 (area): {area} 平方公里\n", encoding="utf-8")
    index = DocsIndex(docs, tmp_path / "index.db")
    index.update()
    assert [h.path for h in index.search("成都 面积")] == ["成都.md"]  # 面积 is in every file
    everywhere = index.search("面积")
    assert len(everywhere) == 4 and {h.score for h in everywhere} == {0}  # nothing better: all shown


def test_chinese_words_are_found_inside_unsegmented_text(folder, tmp_path):
    index = DocsIndex(folder, tmp_path / "index.db")
    index.update()
    [hit] = index.search("杭州 多云")
    assert hit.path == "weather.md" and hit.title == "杭州天气"
    assert "[杭州]今天[多云]" in hit.snippet
    assert [h.path for h in index.search("州今天多")] == ["weather.md"]  # any run of characters is found
    assert index.search("上海") == []


def test_only_changed_files_are_reindexed(folder, tmp_path):
    index = DocsIndex(folder, tmp_path / "index.db")
    index.update()
    assert index.update().reindexed == 0
    changed = folder / "guide" / "shipping.txt"
    changed.write_text("Shipping\nParcels now leave twice a day.\n", encoding="utf-8")
    os.utime(changed, ns=(time.time_ns(), time.time_ns() + 10**9))
    seen = []
    stats = index.update(progress=lambda done, total, path: seen.append((done, total, path)))
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (0, 1, 0, 10)
    assert seen == [(1, 1, "guide/shipping.txt")]
    assert [h.path for h in index.search("twice")] == ["guide/shipping.txt"]
    assert [h.path for h in index.search("refund")] == ["refunds.md"]  # the old text is gone


def test_new_and_deleted_files_are_picked_up(folder, tmp_path):
    index = DocsIndex(folder, tmp_path / "index.db")
    index.update()
    (folder / "refunds.md").unlink()
    (folder / "faq.md").write_text("# FAQ\nHow long do refunds take?", encoding="utf-8")
    stats = index.update()
    assert (stats.added, stats.removed) == (1, 1)
    assert sorted(h.path for h in index.search("refunds")) == ["faq.md", "guide/shipping.txt"]
    assert index.count() == 11


def test_the_tool_updates_before_each_search(folder, tmp_path):
    search = builtin("search_docs", folder=folder, index=tmp_path / "index.db")
    assert search.invoke({"query": "warehouse"}).startswith("- guide/shipping.txt — Shipping\nShipping\nParcels leave")
    (folder / "new.md").write_text("# Warehouse tour\nThe warehouse opens at 8.", encoding="utf-8")
    assert search.invoke({"query": "warehouse"}).startswith("- new.md — Warehouse tour")


def test_symlinks_hidden_folders_and_other_files_are_not_indexed(folder, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("refund secret outside", encoding="utf-8")
    (folder / "link.md").symlink_to(outside)
    index = DocsIndex(folder, tmp_path / "index.db")
    index.update()
    assert "secret" not in " ".join(h.snippet for h in index.search("secret"))
    assert index.count() == 11


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "NEAR(refund policy)", "body:refund", "refund*", "refund OR", "NOT refund", "^refund", "refund AND (", "'; DROP TABLE docs; --"],
)
def test_fts_syntax_in_a_query_is_just_text(folder, tmp_path, unchanged, query):
    search = builtin("search_docs", folder=folder, index=tmp_path / "index.db")
    snapshot = (tmp_path / "index.db").read_bytes()
    result = run_tool(search, {"query": query})
    assert not result.error, result.observation
    assert result.observation.startswith(("- ", "no document matches"))
    assert (tmp_path / "index.db").read_bytes() == snapshot


def test_a_query_without_words_is_refused_clearly(folder, tmp_path):
    search = builtin("search_docs", folder=folder, index=tmp_path / "index.db")
    result = run_tool(search, {"query": "?!*"})
    assert result.error and result.observation == "ERROR: ValueError: the query '?!*' has no words to search for; give a few keywords"
    assert fts_query("a b") == '"a" OR "b"'


def test_no_match_says_so_and_is_not_an_error(folder, tmp_path):
    result = run_tool(builtin("search_docs", folder=folder, index=tmp_path / "index.db"), {"query": "zebra"})
    assert (result.observation, result.error) == ("no document matches 'zebra' (11 files searched); try other or fewer keywords", False)


def test_search_docs_needs_an_existing_folder(tmp_path):
    with pytest.raises(ConfigurationError, match=r"tool 'search_docs' needs a folder of documents: give --docs DIR"):
        builtin("search_docs")
    with pytest.raises(ConfigurationError, match="docs folder '.*nope' is not an existing directory"):
        builtin("search_docs", folder=tmp_path / "nope")


def test_the_default_index_lives_in_the_cache_directory(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index = DocsIndex(folder)
    assert index.index.parent == tmp_path / "cache" / "reinloop"
    assert index.update().added == 11


def test_hits_name_paths_read_file_opens_when_the_docs_are_in_the_sandbox(folder, tmp_path):
    search, read = builtins("search_docs,read_file", sandbox=tmp_path, docs=folder)
    hits = run_tool(search, {"query": "shipping"}).observation
    assert hits.startswith("- docs/guide/shipping.txt — Shipping")
    assert "Parcels leave the warehouse daily" in run_tool(read, {"path": "docs/guide/shipping.txt"}).observation
    alone = builtin("search_docs", folder=folder, index=tmp_path / "i.db")  # no sandbox: paths within the folder
    assert run_tool(alone, {"query": "shipping"}).observation.startswith("- guide/shipping.txt — Shipping")
    elsewhere = builtin("search_docs", folder=folder, index=tmp_path / "j.db", sandbox=tmp_path / "other")
    assert run_tool(elsewhere, {"query": "shipping"}).observation.startswith("- guide/shipping.txt — Shipping")


@pytest.fixture
def cities(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    padding = "The figures below are the yearbook's. 本手册中的数字均以年鉴为准。" * 3
    for slug, city, people, area in (("hangzhou", "杭州", 1252, 16850), ("shenzhen", "深圳", 1779, 1997),
                                      ("beijing", "北京", 2186, 16410), ("wuhan", "武汉", 1377, 8569)):
        (docs / f"city_{slug}.md").write_text(
            f"# {city}\n\n{city}位于中国。{padding}\n\n- 常住人口: {people} 万人\n- 面积: {area} 平方公里\n", encoding="utf-8")
    return docs


def test_a_whole_chinese_question_as_the_query_finds_the_files_sharing_its_words(cities, tmp_path):
    # Qwen2.5-0.5B searched the task's question verbatim; as one phrase it matched nothing.
    index = DocsIndex(cities, tmp_path / "index.db")
    index.update()
    hits = index.search("杭州和深圳的常住人口相差多少万人")
    assert {h.path for h in hits[:2]} == {"city_hangzhou.md", "city_shenzhen.md"}
    assert [h.path for h in index.search("杭州人口密度")][0] == "city_hangzhou.md"
    assert fts_query("杭州 天气预报").replace("\u200b", "") == '"杭州" OR "天气" OR "气预" OR "预报"'


def test_the_best_hit_shows_its_files_figures_even_when_the_query_matches_only_the_title(cities, tmp_path):
    # Qwen searched "杭州": the snippet was the title and padding, so it searched again instead of reading.
    search = builtin("search_docs", folder=cities, index=tmp_path / "index.db", sandbox=tmp_path)
    shown = run_tool(search, {"query": "杭州", "limit": 1}).observation
    assert shown.startswith("- docs/city_hangzhou.md — 杭州\n# 杭州")
    assert "常住人口: 1252 万人" in shown and "面积: 16850 平方公里" in shown
    cut = builtin("search_docs", folder=cities, index=tmp_path / "cut.db", sandbox=tmp_path, preview_chars=20)
    assert "more characters: read_file 'docs/city_hangzhou.md' for the rest)" in run_tool(cut, {"query": "杭州"}).observation


def test_files_that_match_nearly_as_well_as_the_best_show_their_figures_too(cities, tmp_path):
    # Qwen searched "杭州,深圳" for their difference: Shenzhen's hit showed only its title, and it searched again
    search = builtin("search_docs", folder=cities, index=tmp_path / "index.db", sandbox=tmp_path)
    shown = run_tool(search, {"query": "杭州,深圳"}).observation
    assert "常住人口: 1252 万人" in shown and "常住人口: 1779 万人" in shown
    alone = run_tool(search, {"query": "杭州 人口"}).observation  # Hangzhou matches best by far: the others stay snippets
    assert "常住人口: 1252 万人" in alone and "1779" not in alone and "2186" not in alone


def test_hits_show_no_rank_number_or_score_an_answer_could_pass_off_as_a_figure(cities, tmp_path):
    search = builtin("search_docs", folder=cities, index=tmp_path / "index.db", preview_chars=0)
    shown = run_tool(search, {"query": "杭州 深圳"}).observation
    assert shown.startswith("- city_") and "score" not in shown and "\n- city_" in shown
    assert not any(line.lstrip().startswith(("1.", "2.")) for line in shown.splitlines())  # no rank numbers
