"""The class report's page: one self-contained HTML file (inline CSS, charts
as inline SVG, no script, no font or image to fetch; its Content-Security-
Policy forbids every load), drawn from the numbers of :mod:`.report` and
each student's feedback (:func:`.report.feedback`). It reads alone, copied
anywhere: nothing on it needs another file.

Every student's name, wherever it appears (the roster, the header's zeros,
the causes, the faults, the times, the similar pairs), is a link to
``#s-<i>``: that student's feedback, a panel hidden until its fragment is the
page's target (CSS ``:target``, no script), closed by a link back to the
student's roster row ``#r-<i>``. A link to the student's results.json is an
extra (it needs the ``_grades`` folder beside the page).

Every chart is an ``<svg class="chart">`` whose marks are ``rect.mark``
elements (the browser test checks that each chart draws some)."""
from __future__ import annotations

from html import escape
from typing import Optional

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MAX_LISTED = 40          # members named in a group before the rest fold away
HEADER_NAMED = 12        # zeros named in the header before "and N more"
CONTEXT = 2              # unmatched lines shown around a matched run in a side-by-side
CODE_PAIRS = 10          # flagged pairs shown side by side

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1180px;
 padding:0 18px 40px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d9dee6;
 padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.sub{color:#5b6574;margin:0 0 12px}.note{color:#5b6574;font-size:12.5px}
table{border-collapse:collapse;width:100%;margin:6px 0 10px}th,td{text-align:left;padding:4px 8px;
 border-bottom:1px solid #edf0f4;vertical-align:top}th{background:#f5f7fa;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:18px}.card{border:1px solid #e3e7ee;
 border-radius:6px;padding:10px 12px}
.chart{width:100%;height:auto;display:block}.chart text{font-size:11px;fill:#3b4452}
rect.mark{fill:#4c78a8}rect.mark.hot{fill:#e45756}rect.track{fill:#eef1f5}
.tag{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;background:#eef1f5;
 color:#3b4452;margin-right:4px}.tag.diag{background:#fde9d9;color:#8a3b00}
.tag.hidden{background:#e8e4f7;color:#4a3a8a}.tag.review{background:#fff1c2;color:#6b5000}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;border:1px solid #e3e7ee;
 border-radius:4px;padding:6px 8px;margin:4px 0;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.people a,.people span{margin-right:8px;white-space:nowrap}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:10px}.code{font:12px/1.35 ui-monospace,Menlo,
 Consolas,monospace;border:1px solid #e3e7ee;border-radius:4px;overflow-x:auto}
.code div{white-space:pre;padding:0 6px}.code .m{background:#fff1c2}.code .gap{color:#8a93a3;
 background:#f5f7fa;font-style:italic}.code .ln{color:#8a93a3;display:inline-block;
 width:var(--ln,8ch);margin-right:1ch;text-align:right;user-select:none}
details>summary{cursor:pointer}
.fb{display:none}.fb:target{display:block;position:fixed;top:0;right:0;bottom:0;
 width:min(820px,96vw);overflow:auto;background:#fff;border-left:3px solid #4c78a8;
 box-shadow:-8px 0 24px rgba(20,30,50,.22);padding:6px 20px 40px;z-index:10}
.fb h2{border:0;margin-top:10px}.fb .close{float:right;margin-top:14px;font-weight:600}
.fb h4{margin:14px 0 2px;font-size:14px}.fb .sc{font-weight:600}
tr:target{background:#fff7d6}.roster td{padding:3px 8px}
.tag.zero{background:#fde2e1;color:#8c1d18}.tag.full{background:#ddf3e4;color:#1d6b3a}
"""


def _n(x: Optional[float], digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _pct(x: Optional[float]) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


# ============================================================================ charts
def histogram_svg(name: str, hist: dict, xlabel: str, highlight_last: bool = False) -> str:
    """Bars of ``hist`` ({"edges", "counts"}), counts above each bar."""
    counts, edges = hist["counts"], hist["edges"]
    w, h, left, bottom, top = 560, 210, 34, 34, 14
    plot_w, plot_h = w - left - 10, h - bottom - top
    peak = max(counts + [1])
    bw = plot_w / max(1, len(counts))
    out = [f'<svg class="chart" data-chart="{escape(name)}" viewBox="0 0 {w} {h}" role="img" '
           f'aria-label="{escape(xlabel)}"><title>{escape(xlabel)}</title>']
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
               'stroke="#9aa3b0"/>')
    for i, c in enumerate(counts):
        bh = plot_h * c / peak
        x = left + i * bw
        cls = "mark hot" if highlight_last and i == len(counts) - 1 else "mark"
        out.append(f'<rect class="{cls}" x="{x + 1:.1f}" y="{top + plot_h - bh:.1f}" '
                   f'width="{max(bw - 2, 1):.1f}" height="{max(bh, 0.5 if c else 0):.1f}">'
                   f'<title>{edges[i]:g} to {edges[i + 1]:g}: {c}</title></rect>')
        if c:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{top + plot_h - bh - 3:.1f}" '
                       f'text-anchor="middle">{c}</text>')
    step = max(1, len(counts) // 6)
    for i in range(0, len(edges), step):
        out.append(f'<text x="{left + i * bw:.1f}" y="{top + plot_h + 14}" '
                   f'text-anchor="middle">{edges[i]:.3g}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{h - 4}" text-anchor="middle">'
               f'{escape(xlabel)}</text></svg>')
    return "".join(out)


def bars_svg(name: str, rows: list[tuple[str, float, str]], title: str) -> str:
    """Horizontal bars: (label, value in [0, 1], text at the bar's end)."""
    row_h, left, w = 22, 190, 560
    h = row_h * len(rows) + 26
    out = [f'<svg class="chart" data-chart="{escape(name)}" viewBox="0 0 {w} {h}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    span = w - left - 70
    for i, (label, value, text) in enumerate(rows):
        y = 6 + i * row_h
        out.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{escape(label[:28])}'
                   '</text>')
        out.append(f'<rect class="track" x="{left}" y="{y + 3}" width="{span}" height="14"/>')
        out.append(f'<rect class="mark" x="{left}" y="{y + 3}" '
                   f'width="{max(span * min(max(value, 0.0), 1.0), 1.0):.1f}" height="14">'
                   f'<title>{escape(label)}: {escape(text)}</title></rect>')
        out.append(f'<text x="{left + span + 6}" y="{y + 14}">{escape(text)}</text>')
    out.append(f'<text x="{left + span / 2:.0f}" y="{h - 4}" text-anchor="middle">'
               f'{escape(title)}</text></svg>')
    return "".join(out)


# ============================================================================ students
def _names(data: dict, members: list[int], n: int = HEADER_NAMED) -> str:
    shown = ", ".join(_who(data, i) for i in members[:n])
    return shown + (f" and {len(members) - n} more (the roster's first rows)"
                    if len(members) > n else "")


def _header(data: dict) -> str:
    """The line under the title: the class's numbers, the zeros by name."""
    t = data["totals"]
    text = (f'{data["submissions"]} submissions; total mean {t["mean"]:.2f} and median '
            f'{t["median"]:.2f} of {t["max"]:g}; {t["full"]} full marks; {t["zeros"]} scored 0')
    zeros = data.get("zeros") or []
    if zeros:
        text += ": " + _names(data, zeros)
        idle = [i for i in zeros if i in set(data.get("non_attempts") or [])]
        if idle:
            text += f" ({len(idle)} of them attempted nothing)"
    clusters = (data.get("similarity") or {}).get("clusters") or []
    if clusters:
        text += (f'; <a href="#similar">{len(clusters)} cluster(s) of submissions sharing '
                 "one source</a>")
    return (f'<p class="sub">{text}' + ("; anonymous" if data["anonymous"] else "")
            + '. <a href="#roster">Every student</a>: one click opens their feedback.</p>')


def _similar_flag(data: dict, i: int) -> str:
    flag = data["students"][i].get("similar") or {}
    tags = []
    if flag.get("cluster") is not None:
        c = data["similarity"]["clusters"][flag["cluster"]]
        tags.append(f'<a class="tag review" href="#cluster-{flag["cluster"] + 1}">cluster '
                    f'{flag["cluster"] + 1} ({c["size"]})</a>')
    for other, score in flag.get("pairs") or []:
        tags.append(f'<span class="tag review">{_pct(score)}</span> {_who(data, other)}')
    return " ".join(tags)


def _lost(data: dict, st: dict) -> str:
    lost = st.get("lost") or []
    if not lost:
        return ""
    if len(lost) == len([q for q in data["questions"] if q["points"]]) and len(lost) > 2:
        return f"all {len(lost)} questions"
    return ", ".join(f'{escape(q)} <span class="note">−{pts:g}</span>' for q, pts in lost)


def _state_tag(st: dict) -> str:
    from .report import STATE_WORDS
    state = st.get("state") or "graded"
    words = STATE_WORDS.get(state, state.replace("_", " "))
    if state == "graded":
        return words
    return f'<span class="tag zero">{escape(words)}</span>'


def _roster(data: dict) -> str:
    """One row per student, in the roster's order: each opens their feedback."""
    top = data["totals"]["max"]
    rows = []
    for n, i in enumerate(data["roster"], 1):
        st = data["students"][i]
        total = st["total"]
        mark = (' <span class="tag zero">0</span>' if total <= 0 else
                ' <span class="tag full">full</span>' if top and total >= top else "")
        ids = "" if data["anonymous"] else " ".join(
            f'<span class="note">{escape(str(x))}</span>' for x in st.get("ids") or []
            if str(x) != st["label"])
        rows.append(f'<tr id="r-{i}"><td class="n">{n}</td><td>{_who(data, i)} {ids}</td>'
                    f'<td class="n">{total:g} / {top:g}{mark}</td><td>{_state_tag(st)}</td>'
                    f'<td>{_lost(data, st)}</td><td>{_similar_flag(data, i)}</td></tr>')
    return ('<table class="roster"><tr><th class="n">#</th><th>student (opens the feedback)'
            '</th><th class="n">total</th><th>status</th><th>points lost on</th>'
            '<th>similarity</th></tr>' + "".join(rows) + "</table>"
            '<p class="note">By total, lowest first; among equal totals, the submissions that '
            'attempted nothing first.</p>')


def _panel(data: dict, i: int, fb: Optional[dict]) -> str:
    """Student ``i``'s feedback panel (shown when ``#s-<i>`` is the target):
    what they see once grades are published, or, anonymous, the scores."""
    st = data["students"][i]
    top = data["totals"]["max"]
    head = (f'<section class="fb" id="s-{i}"><a class="close" href="#r-{i}">close ✕</a>'
            f'<h2>{escape(st["label"])}: {st["total"]:g} / {top:g}</h2>'
            f'<p class="sub">{_state_tag(st)}')
    if st.get("results"):
        head += (f' · <a href="{escape(st["results"])}">results.json</a> <span class="note">'
                 "(needs the _grades folder beside this page)</span>")
    flag = _similar_flag(data, i)
    if flag:
        head += f"<br>similarity: {flag}"
    head += "</p>"
    if fb is None:
        return head + "<p>No feedback recorded.</p></section>"
    body = []
    if fb.get("error"):
        body.append(f'<h4>the grading did not finish</h4><pre>{escape(fb["error"])}</pre>')
    if fb.get("output"):
        body.append("<h4>messages</h4>" + _text(fb["output"], fb.get("cut", 0)))
    for t in fb["tests"]:
        status = t.get("status") or ""
        tag = ' <span class="tag hidden">never shown to the student</span>' if t.get("hidden") \
            else ""
        body.append(f'<h4>{escape(t["name"])}: <span class="sc">{t["score"]:g} / '
                    f'{t["max"]:g}</span>{tag}</h4>')
        if "output" in t:
            body.append(_text(t["output"], t.get("cut", 0)))
        else:
            from .report import STATUS_WORDS
            failed = ", ".join(f'{escape(pid or "(question)")} '
                               f'<span class="note">{escape(kind.replace("_", " "))}</span>'
                               for pid, kind in t.get("failed") or [])
            body.append(f'<p>{escape(STATUS_WORDS.get(status, status))}'
                        + (f"; failed: {failed}" if failed else "") + "</p>")
    if data["anonymous"]:
        body.append('<p class="note">Anonymous report: scores and failed parts only, no '
                    "feedback text.</p>")
    return head + "".join(body) + "</section>"


def _text(text: str, cut: int) -> str:
    more = (f'<p class="note">… {cut} more character(s) in its results.json</p>'
            if cut else "")
    return f"<pre>{escape(text)}</pre>{more}"


def _panels(data: dict, feedback: Optional[list]) -> str:
    return "".join(_panel(data, i, feedback[i] if feedback else None)
                   for i in data["roster"])


# ============================================================================ pieces
def _who(data: dict, i: int) -> str:
    """Student ``i``'s label, a link to their feedback on this page."""
    return f'<a href="#s-{i}">{escape(data["students"][i]["label"])}</a>'


def _people(data: dict, members: list[int]) -> str:
    shown = " ".join(_who(data, i) for i in members[:MAX_LISTED])
    if len(members) <= MAX_LISTED:
        return f'<div class="people">{shown}</div>'
    rest = " ".join(_who(data, i) for i in members[MAX_LISTED:])
    return (f'<div class="people">{shown}<details><summary>{len(members) - MAX_LISTED} more'
            f'</summary>{rest}</details></div>')


def _cause(g: dict) -> str:
    if g.get("cause"):
        return (f'<span class="tag diag">root elsewhere</span> {escape(g["cause"])} '
                '<span class="note">(parts of this question that failed because of it)</span>')
    kind = g["kind"] or g["status"]
    tags = [f'<span class="tag">{escape(kind.replace("_", " "))}</span>']
    if g["hidden"]:
        tags.append('<span class="tag hidden">hidden case</span>')
    if g["diagnosis"]:
        tags.append(f'<span class="tag diag">diagnosis</span> {escape(g["diagnosis"])}')
    elif g["case"]:
        tags.append(f'first failing case: {escape(g["case"])}')
    elif not g["part"]:
        tags.append("the question ended before any part")
    return " ".join(tags)


def _overview(data: dict) -> str:
    rows = []
    for q in data["questions"]:
        rows.append(f'<tr><td>{escape(q["name"])}</td><td class="n">{q["points"]:g}</td>'
                    f'<td class="n">{_n(q["mean"])}</td><td class="n">{_pct(q["pass_rate"])}</td>'
                    f'<td class="n">{q["zeros"]}</td><td class="n">{_n(q["difficulty"])}</td>'
                    f'<td class="n">{_n(q["discrimination"])}</td>'
                    f'<td class="n">{_n(q["lost"], 1)}</td><td class="n">'
                    f'{_n(q["lost_to_faults"], 1)}</td></tr>')
    return ('<table><tr><th>question</th><th class="n">points</th><th class="n">mean</th>'
            '<th class="n">full marks</th><th class="n">zeros</th><th class="n">difficulty</th>'
            '<th class="n">discrimination</th><th class="n">points lost</th>'
            '<th class="n">of which to faults</th></tr>' + "".join(rows) + "</table>"
            '<p class="note">difficulty: the share of the question\'s points the class lost; '
            'discrimination: the correlation of the question\'s score with the rest of the '
            'total (near 0 or negative: the question does not separate strong and weak work; '
            '– where a score does not vary).</p>')


def _top_causes(data: dict, n: int = 10) -> str:
    everything = [(q, g) for q, groups in data["causes"].items() for g in groups]
    everything.sort(key=lambda qg: -qg[1]["points_lost"])
    rows = [f'<tr><td><a href="#q-{escape(q)}">{escape(q)}</a></td>'
            f'<td>{_part(g)}</td>'
            f'<td>{_cause(g)}</td><td class="n">{g["count"]}</td>'
            f'<td class="n">{g["points_lost"]:.1f}</td><td>{_few(data, g["members"])}</td></tr>'
            for q, g in everything[:n]]
    if not rows:
        return "<p>No points were lost to wrong answers.</p>"
    return ('<table><tr><th>question</th><th style="width:28%">part</th><th>cause</th>'
            '<th class="n">submissions</th><th class="n">points lost</th><th>students</th></tr>'
            + "".join(rows) + "</table>")


def _part(g: dict) -> str:
    """A group's part: its title, with its id (what results.json names it)."""
    if g.get("cause"):
        return "(failed because of another question)"
    if not g["part"]:
        return "(whole question)"
    return f'{escape(g.get("title") or g["part"])} <span class="note">[{escape(g["part"])}]</span>'


def _whole(data: dict) -> str:
    """Submissions graded as a whole (nothing implemented, ...): one line each status."""
    if not data.get("whole"):
        return ""
    items = "".join(f'<li>{escape(w["words"])}: {w["count"]} submission(s) '
                    f'{_few(data, w["members"])}</li>' for w in data["whole"])
    return ('<p>Kept out of the causes below (each counted once, not per question):</p>'
            f'<ul>{items}</ul>')


def _few(data: dict, members: list[int], n: int = 4) -> str:
    more = f' <span class="note">and {len(members) - n} more</span>' if len(members) > n else ""
    return '<div class="people">' + " ".join(_who(data, i) for i in members[:n]) + more + "</div>"


def _question_sections(data: dict) -> str:
    out = []
    for q in data["questions"]:
        groups = data["causes"].get(q["name"], [])
        head = (f'<h3 id="q-{escape(q["name"])}">{escape(q["name"])}: {escape(q["title"])}</h3>'
                f'<p class="sub">{q["points"]:g} points; mean {_n(q["mean"])}; full marks '
                f'{_pct(q["pass_rate"])}; {len(groups)} cause(s) of lost points</p>')
        if not groups:
            out.append(head + "<p>No wrong answers.</p>")
            continue
        rows = []
        for g in groups:
            rows.append(
                f'<tr><td>{_part(g)}<br>{_cause(g)}'
                f'<details><summary>example feedback</summary><pre>{escape(g["example"])}'
                f'</pre></details></td><td class="n">{g["count"]}</td>'
                f'<td class="n">{g["points_lost"]:.1f}</td><td>'
                f'{_people(data, g["members"])}</td></tr>')
        out.append(head + '<table><tr><th style="width:46%">part and cause</th><th class="n">'
                   'submissions</th><th class="n">points lost</th><th>students</th></tr>'
                   + "".join(rows) + "</table>")
    return "".join(out)


def _faults(data: dict) -> str:
    from .report import STATUS_WORDS as words
    parts = []
    if data["unfinished"]:
        rows = "".join(f'<tr><td>{_who(data, u["member"])}</td><td>{escape(u["status"])}</td>'
                       f'<td><pre>{escape(u["error"])}</pre></td></tr>'
                       for u in data["unfinished"])
        parts.append('<h3>Gradings that did not finish</h3><table><tr><th>submission</th>'
                     '<th>status</th><th>error</th></tr>' + rows + "</table>")
    if data["faults"]:
        rows = "".join(
            f'<tr><td>{escape(f["question"])}</td><td>{escape(words.get(f["status"], f["status"]))}'
            f'</td><td class="n">{f["count"]}</td><td class="n">{f["points_lost"]:.1f}</td>'
            f'<td>{_people(data, f["members"])}<details><summary>example</summary><pre>'
            f'{escape(f["example"])}</pre></details></td></tr>' for f in data["faults"])
        parts.append('<h3>Questions that did not finish</h3><table><tr><th>question</th>'
                     '<th>status</th><th class="n">submissions</th><th class="n">points lost'
                     '</th><th>students</th></tr>' + rows + "</table>")
    if not parts:
        return "<p>None: every grading and every question ran to its end.</p>"
    return "".join(parts)


def _times(data: dict) -> str:
    t = data["times"]
    rows = "".join(f'<tr><td>{_who(data, s["member"])}</td><td class="n">{s["seconds"]:.1f}</td>'
                   f'<td>{escape(s["question"])}</td><td class="n">{s["question_seconds"]:.1f}'
                   '</td></tr>' for s in t["slowest"])
    return (f'<p class="sub">{t["graded"]} gradings; median {t["median"]:.1f} s, longest '
            f'{t["max"]:.1f} s, {t["total"]:.0f} s in all.</p><div class="grid"><div class="card">'
            + histogram_svg("times", t["histogram"], "seconds per grading")
            + '</div><div class="card"><table><tr><th>slowest</th><th class="n">s</th>'
            '<th>slowest question</th><th class="n">s</th></tr>' + rows
            + "</table></div></div>")


def _code(doc, matched: list[int]) -> str:
    """The document's lines with their line numbers, matched lines marked,
    unmatched runs folded beyond CONTEXT lines of a match."""
    lines = doc.lines
    hit = set(matched)
    near = {j for i in hit for j in range(i - CONTEXT, i + CONTEXT + 1)}
    out, skipped, widest = [], 0, 1
    for i, line in enumerate(lines):
        if i not in near:
            skipped += 1
            continue
        if skipped:
            out.append(f'<div class="gap">⋯ {skipped} line(s)</div>')
            skipped = 0
        fname, n = doc.origin[i]
        cls = ' class="m"' if i in hit else ""
        label = f"{fname[:16]}:{n}"
        widest = max(widest, len(label))
        out.append(f'<div{cls}><span class="ln">{escape(label)}</span>'
                   f'{escape(line)}</div>')
    if skipped:
        out.append(f'<div class="gap">⋯ {skipped} line(s)</div>')
    # the labels' column as wide as its longest label: no label runs into its line of code
    return f'<div class="code" style="--ln:{widest}ch">' + "".join(out) + "</div>"


def _clusters(data: dict) -> str:
    s = data["similarity"]
    if not s.get("clusters"):
        return (f'<p>No cluster: no {s["cluster_min"]} or more submissions joined by '
                "flagged pairs.</p>")
    rows = []
    for c, cl in enumerate(s["clusters"], 1):
        rows.append(
            f'<tr id="cluster-{c}"><td>cluster {c}</td><td><b>{cl["size"]} submissions share '
            f'{100 * cl["share"]:.0f} % of their code</b> <span class="note">(the median '
            f'member; the least {100 * cl["least"]:.0f} %; {cl["pairs"]} flagged pair(s) among '
            f'them)</span>{_people(data, cl["members"])}</td></tr>')
    return ('<h3>Clusters: one source shared by many</h3><table><tr><th>cluster</th><th>size, '
            "shared code and members</th></tr>" + "".join(rows) + "</table>"
            '<p class="note">A cluster: submissions joined by flagged pairs. Its shared code: '
            "per member, the part of its own code (beyond what the handout ships) covered by "
            "passages found in more than half of the cluster's members. A leaked solution "
            "copied by many shows as one cluster; read its members' code before drawing any "
            "conclusion.</p>")


def _similarity(data: dict, sim) -> str:
    s = data.get("similarity")
    if s is None:
        return "<p>Not computed.</p>"
    if s["error"]:
        return f"<p>{escape(s['error'])}</p>"
    intro = (f'<p class="sub"><span class="tag review">for review</span> Submissions whose code '
             f'is unusually alike: never a verdict; read both before drawing any conclusion. '
             f'{s["flagged"]} pair(s) flagged (the larger share at least '
             f'{100 * s["flag_share"]:.0f}% and at least {s["min_overlap"]} normalised characters '
             f'in common), {len(s.get("clusters") or [])} cluster(s); {s["compared"]} of '
             f'{s["possible"]} pairs share some code and were measured. Common code is only what '
             "the handout ships: the stubs' lines, and the fingerprints of the stubs, the "
             "notebook's code cells and the runtime package (never what most of the class "
             "wrote); names and strings are normalised (copydetect).</p>")
    if s["too_short"]:
        intro += (f'<p class="note">{len(s["too_short"])} submission(s) have too little code of '
                  "their own beyond what the handout ships to compare: "
                  + " ".join(_who(data, i) for i in s["too_short"][:MAX_LISTED])
                  + (" ..." if len(s["too_short"]) > MAX_LISTED else "") + "</p>")
    intro += _clusters(data)
    if not s["pairs"]:
        return intro + "<p>No pair shares enough code to compare.</p>"
    rows = "".join(
        f'<tr><td>{_who(data, p["a"])}</td><td>{_who(data, p["b"])}</td>'
        f'<td class="n">{_pct(p["score"])}</td><td class="n">{_pct(p["shares"][0])} / '
        f'{_pct(p["shares"][1])}</td><td class="n">{p["overlap"]}</td><td>'
        + ('<span class="tag review">for review</span>' if p["flagged"] else "")
        + (f' <a href="#cluster-{p["cluster"] + 1}">cluster {p["cluster"] + 1}</a>'
           if p.get("cluster") is not None else "")
        + "</td></tr>" for p in s["pairs"])
    table = ('<h3>Pairs</h3><table><tr><th>submission</th><th>submission</th><th class="n">'
             'score</th><th class="n">shares</th><th class="n">characters in common</th><th>'
             '</th></tr>' + rows + "</table>"
             '<p class="note">The most alike pairs, at most a few from inside each cluster.</p>')
    views = []
    if sim is not None and not data["anonymous"]:
        by_name = {n: i for i, n in enumerate(st.get("submission") for st in data["students"])}
        for p in [p for p in sim.listed if p.flagged][:CODE_PAIRS]:
            a, b = by_name[p.a], by_name[p.b]
            views.append(
                f'<details class="pair"><summary>{_who(data, a)} and {_who(data, b)}: '
                f'{_pct(p.score)}, matching lines marked (the handout\'s lines removed)</summary>'
                f'<div class="sbs">{_code(sim.documents[p.a], p.matched[0])}'
                f'{_code(sim.documents[p.b], p.matched[1])}</div></details>')
    elif data["anonymous"]:
        views.append('<p class="note">Anonymous report: code is not shown.</p>')
    return intro + table + "".join(views)


def render(data: dict, sim=None, feedback: Optional[list] = None) -> str:
    """The page for ``data`` (:func:`.report.build`); ``sim`` gives the code
    of the flagged pairs (named reports only); ``feedback``
    (:func:`.report.feedback`, one per student) fills the students' panels."""
    t = data["totals"]
    qbars = [(q["name"], q["mean"] / q["points"] if q["points"] else 0.0,
              f'{_n(q["mean"])} / {q["points"]:g}') for q in data["questions"] if q["points"]]
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<title>{escape(data["assignment"])}: class report</title><style>{STYLE}</style>'
        '</head><body>',
        f'<h1>{escape(data["title"])} <span class="note">({escape(data["assignment"])})</span></h1>',
        _header(data),
        '<div class="grid"><div class="card">',
        histogram_svg("totals", t["histogram"], "total score", highlight_last=False),
        '</div><div class="card">',
        bars_svg("questions", qbars, "mean share of each question's points") if qbars else "",
        "</div></div>",
        '<h2 id="roster">Students</h2>', _roster(data),
        "<h2>Top causes of lost points</h2>", _whole(data), _top_causes(data),
        "<h2>Questions</h2>", _overview(data), _question_sections(data),
        "<h2>Autograder faults and time-outs</h2>", _faults(data),
        "<h2>Grading time</h2>", _times(data),
        '<h2 id="similar">Similar submissions</h2>', _similarity(data, sim),
        '<p class="note">Written by grade-all from each results.json\'s data (statuses, part '
        "records, measurements, times) and, in each student's panel, its feedback as published; "
        "nothing here is written to a student's results.json. The page needs no other file."
        "</p>", _panels(data, feedback), "</body></html>"])
