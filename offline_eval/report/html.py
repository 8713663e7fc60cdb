"""report.html: one self-contained page (inline CSS, a little inline JS, charts as inline SVG).

Opening it loads nothing from anywhere: there is no external resource, and a Content-Security-Policy
(default-src 'none', the inline style and script allowed by their hashes) blocks any that slipped in.
Everything that comes from the user's data is HTML-escaped, and the review data the script reads is
JSON with every ``<``, ``>`` and ``&`` written as a ``\\u`` escape, so no text can close its element.

**Review mode.** Every review item (``report.view.review_items``: each sample's scores and each yes/no
verdict of the judge) carries "judge right" / "judge wrong" buttons; keys j/k move between items,
y/n mark the current one and move on, u clears it. The samples can be ordered most worth checking
first (the judge's least certain verdict: |P(yes) − 0.5|, else the score nearest its threshold) or in
a random order fixed per report (review top-down for an unbiased subset, what PPI needs). Marks are
kept in the browser's localStorage under the report's review fingerprint, so they survive a reload;
the bar at the top (always visible) counts them and exports them as labels.jsonl (a Blob download):
the file ``offline-eval agreement`` and ``evaluate --labels`` read.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping
from html import escape
from typing import Any

from offline_eval.metrics import score_owner
from offline_eval.report.formats import register
from offline_eval.report.text import NONE, clip, fmt_ci, fmt_count, fmt_num, is_number, text_of
from offline_eval.report.view import (
    aggregate_for,
    below_threshold,
    categories_of,
    check_label,
    contexts_of,
    detail_for,
    error_rate_rows,
    failed_and_skipped_checks,
    failed_by_value,
    failed_explanation,
    find_check,
    findings_of,
    finding_item_id,
    gate_of,
    gate_value_label,
    has_ppi,
    header_facts,
    judge_determinism,
    matrix_of,
    metric_names,
    not_computable_reason,
    ppi_for,
    review_fingerprint,
    review_items,
    review_summary,
    run_of,
    run_part,
    samples_of,
    score_description,
    score_item_id,
    score_of,
    summary_of,
    threshold_for,
)

N_BINS = 10
# Text symbols, not emoji: they render in ordinary fonts (DejaVu, Noto), so also where no emoji font is.
_ICONS = {"passed": "✔ ", "failed": "✘ ", "skipped": "⚠ "}

_CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--ok:#1a7f37;--okbg:#dafbe1;
--bad:#cf222e;--badbg:#ffebe9;--warn:#9a6700;--warnbg:#fff8c5;--bar:#4c8bd6;--barbad:#e5534b}
*{box-sizing:border-box}
body{margin:0;padding:24px 32px 48px;color:var(--fg);background:var(--bg);line-height:1.45;font:14px/1.45 system-ui,
-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Noto Sans CJK SC","PingFang SC",
"Hiragino Sans GB","Microsoft YaHei",sans-serif}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:32px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:0 0 8px}h4{font-size:13px;margin:14px 0 6px}
.verdict{padding:16px 20px;border-radius:8px;border:1px solid var(--line)}
.verdict.passed{background:var(--okbg);border-color:#aceebb}
.verdict.failed{background:var(--badbg);border-color:#ffcecb}
.verdict.passed h1{color:var(--ok)}.verdict.failed h1{color:var(--bad)}
.meta{color:var(--muted);margin:0}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid var(--line);padding:5px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.status{font-weight:600;white-space:nowrap}.status.passed{color:var(--ok)}.status.failed{color:var(--bad)}
.status.skipped{color:var(--warn)}
ul.gates{padding-left:20px}ul.gates li{margin:4px 0}td>ul{margin:0;padding-left:18px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:16px}
.card{border:1px solid var(--line);border-radius:8px;padding:12px 14px;background:var(--bg)}
.card .sub{color:var(--muted);font-size:12px;margin:0 0 6px}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:11px;fill:var(--muted)}
svg .bar{fill:var(--bar)}svg .bar.below{fill:var(--barbad)}svg .axis{stroke:#8c959f;stroke-width:1}
svg .thr{stroke:var(--bad);stroke-width:1.5;stroke-dasharray:4 3}svg .mean{stroke:var(--fg);stroke-width:1.5}
svg .ci{stroke:var(--fg);stroke-width:1.2}svg .track{fill:var(--soft)}
svg text.lbl{fill:var(--fg)}svg text.thr-t{fill:var(--bad)}
.toolbar{display:flex;gap:12px;align-items:center;margin:0 0 10px;flex-wrap:wrap}
.toolbar input{font:inherit;padding:6px 10px;width:min(420px,100%);border:1px solid var(--line);border-radius:6px}
.toolbar button{font:inherit;padding:5px 10px;border:1px solid var(--line);border-radius:6px;background:var(--soft);
cursor:pointer}
#count{color:var(--muted)}
.samples{border:1px solid var(--line);border-radius:8px;overflow:hidden}
.samples .row{display:grid;grid-template-columns:var(--cols);gap:8px;align-items:center;padding:6px 12px}
.samples .head{background:var(--soft);font-weight:600;border-bottom:1px solid var(--line)}
.samples .head{font-size:12px;align-items:end}.samples .head span.num{text-align:right}
details.sample{border-bottom:1px solid var(--line)}details.sample:last-child{border-bottom:0}
details.sample>summary{list-style:none;cursor:pointer}
details.sample>summary::-webkit-details-marker{display:none}
details.sample>summary:hover{background:#f3f6fa}details.sample[open]>summary{background:#eef4fb}
.row .id{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:anywhere}
.row .id::before{content:"\\25B8 ";color:var(--muted)}details[open] .row .id::before{content:"\\25BE "}
.row .q{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.sc{justify-self:end;padding:1px 7px;border-radius:10px;font-variant-numeric:tabular-nums;white-space:nowrap}
.sc.ok{background:var(--okbg);color:var(--ok)}
.sc.bad{background:var(--badbg);color:var(--bad);font-weight:600}
.sc.na{background:var(--warnbg);color:var(--warn)}.sc.plain{background:var(--soft)}
.ev{padding:4px 16px 16px 28px;background:#fbfcfd;border-top:1px dashed var(--line)}
.ev .txt{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--soft);border-radius:6px;padding:6px 10px;
margin:2px 0 8px}
.ev dt{font-weight:600;margin-top:6px}.ev dd{margin:0}
.ev ul{margin:4px 0;padding-left:18px}.ev li{margin:2px 0;overflow-wrap:anywhere}
.ev table{font-size:13px}.ev td.preview{max-width:640px;overflow-wrap:anywhere}
.v{display:inline-block;font-size:11px;font-weight:600;padding:0 6px;border-radius:9px;margin-right:6px;
white-space:nowrap}
.v.good{background:var(--okbg);color:var(--ok)}.v.bad{background:var(--badbg);color:var(--bad)}
.v.na{background:var(--warnbg);color:var(--warn)}.v.plain{background:var(--soft);color:var(--muted)}.ev .lbl{color:var(--muted);margin-right:6px}
.ev .p{color:var(--muted);font-size:12px;white-space:nowrap}
.nc{color:var(--warn)}p.nc{margin:2px 0 8px}
#reviewbar{position:sticky;top:0;z-index:10;display:flex;gap:10px;align-items:center;flex-wrap:wrap;
margin:-24px -32px 16px;padding:8px 32px;background:#f0f4f9;border-bottom:1px solid var(--line);font-size:13px}
#reviewbar strong{font-size:14px}
#reviewbar input{font:inherit;padding:3px 8px;width:11rem;border:1px solid var(--line);border-radius:6px}
#reviewbar button,.toolbar select{font:inherit;padding:4px 10px;border:1px solid var(--line);border-radius:6px;
background:var(--bg);cursor:pointer}
#reviewbar #export{background:var(--bar);color:#fff;border-color:var(--bar);font-weight:600}
#reviewbar .keys{color:var(--muted)}#rstatus{color:var(--warn)}
kbd{font:11px ui-monospace,Menlo,Consolas,monospace;border:1px solid var(--line);border-bottom-width:2px;
border-radius:4px;padding:0 4px;background:var(--bg)}
.item{border-radius:6px;padding:1px 4px;margin-left:-4px}
.item.current{outline:2px solid var(--bar);background:#eef4fb}
.item.m-right{box-shadow:inset 3px 0 0 var(--ok)}.item.m-wrong{box-shadow:inset 3px 0 0 var(--bad)}
.rv{white-space:nowrap;margin-left:6px}
.rv button{font-size:11px;padding:0 6px;margin-left:2px;border:1px solid var(--line);border-radius:9px;
background:var(--bg);color:var(--muted);cursor:pointer}
.m-right .rv button.right{background:var(--okbg);color:var(--ok);border-color:var(--ok);font-weight:600}
.m-wrong .rv button.wrong{background:var(--badbg);color:var(--bad);border-color:var(--bad);font-weight:600}
.scoreitem{margin:2px 0 6px;font-size:13px;color:var(--muted)}
#summary p.meta{margin:0 0 12px}
.ev ol.ctx{margin:2px 0 8px;padding-left:22px}
table.mx{font-size:12px}table.mx caption{text-align:left;color:var(--muted);padding:2px 0}
table.mx td.c{text-align:center;font-variant-numeric:tabular-nums;white-space:nowrap}
table.mx td.c.yes{background:var(--okbg);color:var(--ok)}table.mx td.c.no{background:var(--badbg);color:var(--bad)}
table.mx td.t{max-width:480px;overflow-wrap:anywhere}
footer{margin-top:32px;color:var(--muted);font-size:12px}
footer dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}footer dt{font-weight:600}
footer dd{margin:0;overflow-wrap:anywhere}
"""

_JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("review-data").textContent);
  var items = data.items;
  var q = document.getElementById("q"), count = document.getElementById("count");
  var order = document.getElementById("order"), show = document.getElementById("show");
  var list = document.querySelector(".samples");
  var rows = Array.prototype.slice.call(document.querySelectorAll("details.sample"));
  var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
  var itemEls = {};
  Array.prototype.forEach.call(document.querySelectorAll("[data-item]"), function (el) {
    itemEls[el.getAttribute("data-item")] = el;
  });
  var reviewer = document.getElementById("reviewer"), rcount = document.getElementById("rcount");
  var rstatus = document.getElementById("rstatus");
  var SEP = String.fromCharCode(31);
  var storeKey = "offline-eval-review:" + data.key;
  var marks = {};
  var storage = null;
  try { storage = window.localStorage; storage.getItem(storeKey); } catch (e) { storage = null; }

  function keyOf(n) { return items[n].s + SEP + items[n].i; }
  function load() {
    if (!storage) {
      rstatus.textContent = "this browser keeps no storage for files: export before closing the page";
      return;
    }
    try {
      var saved = JSON.parse(storage.getItem(storeKey) || "{}");
      marks = saved.marks || {};
      if (saved.reviewer) reviewer.value = saved.reviewer;
    } catch (e) { marks = {}; }
  }
  function save() {
    if (!storage) return;
    try {
      storage.setItem(storeKey, JSON.stringify({marks: marks, reviewer: reviewer.value}));
    } catch (e) { rstatus.textContent = "could not save the marks: export them now"; }
  }
  function paint(n) {
    var el = itemEls[n], m = marks[keyOf(n)];
    if (!el) return;
    el.classList.toggle("m-right", !!m && m.label === "right");
    el.classList.toggle("m-wrong", !!m && m.label === "wrong");
  }
  function tally() {
    var reviewed = 0, wrong = 0;
    items.forEach(function (it, n) {
      var m = marks[keyOf(n)];
      if (m) { reviewed++; if (m.label === "wrong") wrong++; }
    });
    rcount.textContent = reviewed + " of " + items.length + " items reviewed · judge wrong on " + wrong;
    rows.forEach(function (r) {
      var els = r.querySelectorAll("[data-item]"), open = 0, done = 0;
      Array.prototype.forEach.call(els, function (el) {
        if (marks[keyOf(+el.getAttribute("data-item"))]) done++; else open++;
      });
      r.setAttribute("data-open-items", String(open));
      r.setAttribute("data-done-items", String(done));
    });
  }
  function mark(n, label) {
    marks[keyOf(n)] = {label: label, time: new Date().toISOString(), reviewer: reviewer.value.trim()};
    save(); paint(n); tally();
  }
  function unmark(n) {
    delete marks[keyOf(n)];
    save(); paint(n); tally();
  }

  function filter() {
    var terms = q.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0, which = show.value;
    rows.forEach(function (r, i) {
      var ok = terms.every(function (t) { return texts[i].indexOf(t) >= 0; });
      if (which === "open") ok = ok && r.getAttribute("data-open-items") !== "0";
      if (which === "done") ok = ok && r.getAttribute("data-done-items") !== "0";
      r.style.display = ok ? "" : "none";
      if (ok) shown++;
    });
    count.textContent = shown + " of " + rows.length + " samples";
  }
  function sortRows() {
    var by = order.value, key = {report: "data-order", doubt: "data-doubt", random: "data-rand"}[by];
    var sorted = rows.slice().sort(function (a, b) {
      return (+a.getAttribute(key) - +b.getAttribute(key)) ||
        (+a.getAttribute("data-order") - +b.getAttribute("data-order"));
    });
    sorted.forEach(function (r) { list.appendChild(r); });
    current = null;
  }

  var current = null;
  function visibleItems() {
    var out = [];
    Array.prototype.forEach.call(list.querySelectorAll("details.sample"), function (r) {
      if (r.style.display === "none") return;
      Array.prototype.forEach.call(r.querySelectorAll("[data-item]"), function (el) { out.push(el); });
    });
    return out;
  }
  function setCurrent(el) {
    if (current) current.classList.remove("current");
    current = el;
    if (!el) return;
    var sample = el.closest("details.sample");
    if (sample && !sample.open) sample.open = true;
    el.classList.add("current");
    el.scrollIntoView({block: "center"});
  }
  function move(delta) {
    var all = visibleItems();
    if (!all.length) return;
    var i = current ? all.indexOf(current) : -1;
    var next = i < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, i + delta));
    setCurrent(all[next]);
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    if (e.key === "j" || e.key === "ArrowDown") move(1);
    else if (e.key === "k" || e.key === "ArrowUp") move(-1);
    else if ((e.key === "y" || e.key === "n") && current) {
      mark(+current.getAttribute("data-item"), e.key === "y" ? "right" : "wrong");
      move(1);
    } else if (e.key === "u" && current) unmark(+current.getAttribute("data-item"));
    else return;
    e.preventDefault();
  });
  list.addEventListener("click", function (e) {
    var button = e.target.closest ? e.target.closest("button[data-mark]") : null;
    if (!button) return;
    var el = button.closest("[data-item]"), n = +el.getAttribute("data-item");
    var m = marks[keyOf(n)];
    if (m && m.label === button.getAttribute("data-mark")) unmark(n); else mark(n, button.getAttribute("data-mark"));
    setCurrent(el);
    e.preventDefault();
  });

  document.getElementById("export").addEventListener("click", function () {
    var lines = [], name = reviewer.value.trim();
    items.forEach(function (it, n) {
      var m = marks[keyOf(n)];
      if (!m) return;
      var row = {sample_id: it.s, item: it.i, label: m.label, verdict: it.v,
                 reviewer: m.reviewer || name || null, time: m.time};
      lines.push(JSON.stringify(row));
    });
    if (!lines.length) { rstatus.textContent = "nothing to export yet: mark some verdicts first"; return; }
    var blob = new Blob([lines.join("\\n") + "\\n"], {type: "application/x-ndjson"});
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "labels.jsonl";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    rstatus.textContent = "exported " + lines.length + " labels to labels.jsonl";
  });
  reviewer.addEventListener("change", save);

  q.addEventListener("input", filter);
  show.addEventListener("change", filter);
  order.addEventListener("change", function () { sortRows(); filter(); });
  var toggle = document.getElementById("toggle");
  toggle.addEventListener("click", function () {
    var open = toggle.getAttribute("data-open") !== "1";
    rows.forEach(function (r) { if (r.style.display !== "none") r.open = open; });
    toggle.setAttribute("data-open", open ? "1" : "0");
    toggle.textContent = open ? "Collapse all" : "Expand all";
  });
  load();
  items.forEach(function (it, n) { paint(n); });
  tally();
  sortRows();
  filter();
})();
"""


def _h(value: Any) -> str:
    """HTML-escape user-supplied text (quotes too, so it is safe in attributes)."""
    return escape(text_of(value), quote=True)


def _wrappable(name: str) -> str:
    """A metric name that may break after its underscores (narrow table headers)."""
    return "_<wbr>".join(_h(part) for part in name.split("_"))


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _c(x: float) -> str:
    """An SVG coordinate."""
    return f"{x:.1f}"


def _vline(cls: str, x: float, top: float, bottom: float, title: str | None = None) -> str:
    """A vertical SVG marker line at ``x`` from ``top`` down to ``bottom``, with ``title`` as its tooltip."""
    line = f'<line class="{cls}" x1="{_c(x)}" y1="{top}" x2="{_c(x)}" y2="{_c(bottom)}"'
    return f"{line}/>" if title is None else f"{line}><title>{title}</title></line>"


def _status_span(check: Mapping[str, Any] | None) -> str:
    if check is None:
        return NONE
    status = text_of(check.get("status"))
    icon = _ICONS.get(status, "")
    title = f' title="{_h(check.get("reason"))}"' if check.get("reason") else ""
    return f'<span class="status {_h(status)}"{title}>{icon}{_h(status) or NONE}</span>'


# --------------------------------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------------------------------


def _histogram(report: Mapping[str, Any], metric: str) -> str:
    scores = [s for s in (score_of(x, metric) for x in samples_of(report)) if s is not None]
    counts = [0] * N_BINS
    for score in scores:
        if math.isfinite(score):
            counts[min(N_BINS - 1, max(0, math.floor(score * N_BINS + 1e-9)))] += 1
    threshold = threshold_for(report, metric)
    mean = aggregate_for(report, metric).get("mean")
    w, h, left, right, top, bottom = 340, 170, 30, 10, 18, 26
    pw, ph = w - left - right, h - top - bottom
    ymax = max(counts) if any(counts) else 1
    bw = pw / N_BINS
    out = [
        f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{_h(metric)} score histogram">',
        f"<title>{_h(metric)}: {len(scores)} computable scores in {N_BINS} bins over [0, 1]</title>",
    ]
    for i, n in enumerate(counts):
        lo, hi = i / N_BINS, (i + 1) / N_BINS
        bh = ph * n / ymax
        below = threshold is not None and hi <= threshold + 1e-12
        cls = "bar below" if below else "bar"
        out.append(
            f'<rect class="{cls}" x="{_c(left + i * bw + 1)}" y="{_c(top + ph - bh)}" width="{_c(bw - 2)}" '
            f'height="{_c(bh)}"><title>{lo:.1f}–{hi:.1f}: {n} sample{"" if n == 1 else "s"}</title></rect>'
        )
        if n:
            out.append(
                f'<text x="{_c(left + (i + 0.5) * bw)}" y="{_c(top + ph - bh - 3)}" text-anchor="middle">{n}</text>'
            )
    base = top + ph
    out.append(f'<line class="axis" x1="{left}" y1="{_c(base)}" x2="{left + pw}" y2="{_c(base)}"/>')
    out.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{_c(base)}"/>')
    for k in range(0, N_BINS + 1, 2):
        x = left + pw * k / N_BINS
        out.append(f'<text x="{_c(x)}" y="{_c(base + 15)}" text-anchor="middle">{k / N_BINS:.1f}</text>')
    out.append(f'<text x="{left - 5}" y="{_c(top + 4)}" text-anchor="end">{ymax}</text>')
    out.append(f'<text x="{left - 5}" y="{_c(base)}" text-anchor="end">0</text>')
    if threshold is not None and 0 <= threshold <= 1:
        x = left + pw * threshold
        out.append(_vline("thr", x, top - 6, base))
        out.append(
            f'<text class="thr-t" x="{_c(x - 3)}" y="{top - 2}" text-anchor="end">'
            f"threshold {fmt_num(threshold, 2)}</text>"
        )
    if is_number(mean) and math.isfinite(mean) and 0 <= mean <= 1:
        x = left + pw * mean
        out.append(_vline("mean", x, top, base, f"mean {fmt_num(mean)}"))
    out.append("</svg>")
    return "".join(out)


def _category_bars(report: Mapping[str, Any], metric: str, categories: list[str]) -> str:
    threshold = threshold_for(report, metric)
    w, label_w, value_w, row_h, top, bottom = 340, 96, 84, 24, 6, 20
    pw = w - label_w - value_w
    h = top + row_h * len(categories) + bottom
    out = [
        f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{_h(metric)} mean by category">',
        f"<title>{_h(metric)}: mean per category with 95% CI</title>",
    ]
    for i, category in enumerate(categories):
        agg = aggregate_for(report, metric, category)
        mean, low, high = agg.get("mean"), agg.get("ci_low"), agg.get("ci_high")
        y = top + i * row_h
        cy = y + row_h / 2
        out.append(
            f'<text class="lbl" x="{label_w - 6}" y="{_c(cy + 4)}" text-anchor="end">{_h(clip(category, 12))}'
            f"<title>{_h(category)}</title></text>"
        )
        out.append(f'<rect class="track" x="{label_w}" y="{_c(y + 4)}" width="{pw}" height="{row_h - 8}"/>')
        tip = f"{_h(category)}: mean {fmt_num(mean)}, 95% CI {fmt_ci(agg)}, n {fmt_count(agg.get('n'))}"
        if is_number(mean) and math.isfinite(mean):
            frac = min(1.0, max(0.0, mean))
            below = below_threshold(mean, threshold)
            out.append(
                f'<rect class="bar{" below" if below else ""}" x="{label_w}" y="{_c(y + 4)}" width="{_c(pw * frac)}" '
                f'height="{row_h - 8}"><title>{tip}</title></rect>'
            )
            if is_number(low) and is_number(high) and math.isfinite(low) and math.isfinite(high):
                x1 = label_w + pw * min(1.0, max(0.0, low))
                x2 = label_w + pw * min(1.0, max(0.0, high))
                out.append(f'<line class="ci" x1="{_c(x1)}" y1="{_c(cy)}" x2="{_c(x2)}" y2="{_c(cy)}"/>')
                for x in (x1, x2):
                    out.append(f'<line class="ci" x1="{_c(x)}" y1="{_c(cy - 4)}" x2="{_c(x)}" y2="{_c(cy + 4)}"/>')
        out.append(
            f'<text class="lbl" x="{label_w + pw + 6}" y="{_c(cy + 4)}">{fmt_num(mean)} '
            f"<tspan>(n={fmt_count(agg.get('n'))})</tspan></text>"
        )
    base = top + row_h * len(categories)
    for k in (0, 5, 10):
        x = label_w + pw * k / 10
        out.append(f'<text x="{_c(x)}" y="{_c(base + 14)}" text-anchor="middle">{k / 10:.1f}</text>')
    if threshold is not None and 0 <= threshold <= 1:
        x = label_w + pw * threshold
        out.append(_vline("thr", x, top, base, f"threshold {fmt_num(threshold)}"))
    out.append("</svg>")
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


def _header(report: Mapping[str, Any]) -> str:
    passed = gate_of(report).get("passed")
    cls, title = {True: ("passed", "✔ Gate passed"), False: ("failed", "✘ Gate failed")}.get(
        passed, ("", "offline-eval report")
    )
    run = run_of(report)
    facts = header_facts(report, _h, "<code>{}</code>", " ({} skipped)")
    return (
        f'<header class="verdict {cls}"><h1>{title}</h1>'
        f'<p class="meta">{_h(run.get("tool") or "offline-eval")} {_h(run.get("version") or "")} · '
        f"{' · '.join(facts)}</p></header>"
    )


def _summary(report: Mapping[str, Any], metrics: list[str]) -> str:
    ppi = has_ppi(report)
    rows = []
    for metric in metrics:
        agg = aggregate_for(report, metric)
        corrected = ppi_for(report, metric)
        extra = (f'<td class=num title="{_h(corrected.get("note"))}">{fmt_num(corrected.get("value"))}</td>'
                 f"<td class=num>{fmt_ci(corrected)}</td><td class=num>{fmt_count(corrected.get('n_labelled'))}</td>"
                 if ppi else "")
        rows.append(
            f"<tr><td>{_h(metric)}</td><td class=num>{fmt_num(agg.get('mean'))}</td><td class=num>{fmt_ci(agg)}</td>"
            f"{extra}"
            f"<td class=num>{fmt_count(agg.get('n'))}</td><td class=num>{fmt_count(agg.get('n_not_computable'))}</td>"
            f"<td class=num>{fmt_num(threshold_for(report, metric))}</td>"
            f"<td>{_status_span(find_check(report, metric))}</td></tr>"
        )
    head_extra = ("<th class=num>PPI mean</th><th class=num>PPI 95% CI</th><th class=num>reviewed samples</th>"
                  if ppi else "")
    note = (f'<p class="meta">PPI mean: the judge\'s mean corrected by reviewed items — {_h(review_summary(report))}'
            "</p>" if ppi else "")
    return (
        '<section id="summary"><h2>Summary</h2><table><thead><tr><th>metric</th><th class=num>mean</th>'
        f"<th class=num>95% CI</th>{head_extra}<th class=num>n computable</th><th class=num>not computable</th>"
        f"<th class=num>threshold</th><th>status</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{note}{_gates(report)}{_error_rates(report)}</section>"
    )


def _error_rates(report: Mapping[str, Any]) -> str:
    rows = error_rate_rows(report)
    if not rows:
        return ""
    body = []
    for row in rows:
        rate = row.get("error_rate") if isinstance(row.get("error_rate"), Mapping) else {}
        body.append(f"<tr><td>{_h(row.get('metric'))}</td><td>{_h(row.get('kind'))}</td>"
                    f"<td class=num>{fmt_count(row.get('n_reviewed'))}</td><td class=num>{fmt_count(row.get('n_wrong'))}"
                    f"</td><td class=num>{fmt_num(rate.get('value'))}</td><td class=num>{fmt_ci(rate)}</td></tr>")
    return ("<h3>Judge error rate on reviewed items</h3><table><thead><tr><th>metric</th><th>kind</th>"
            "<th class=num>reviewed</th><th class=num>judge wrong</th><th class=num>error rate</th>"
            f"<th class=num>95% CI (Wilson)</th></tr></thead><tbody>{''.join(body)}</tbody></table>")


def _gates(report: Mapping[str, Any]) -> str:
    failed, skipped = failed_and_skipped_checks(report)
    out = []
    value_label = gate_value_label(report)
    if failed:
        items = []
        for check in failed:
            value = ""
            if failed_by_value(check):
                threshold = fmt_num(check.get("threshold"))
                value = f": {_h(value_label)} {fmt_num(check.get('value'))} &lt; threshold {threshold}"
            items.append(
                f'<li><span class="status failed">✘</span> <strong>{_h(check_label(check))}</strong>{value} — '
                f"{_h(failed_explanation(check))}</li>"
            )
        out.append(f'<h3>Failed gates</h3><ul class="gates">{"".join(items)}</ul>')
    if skipped:
        items = [
            f'<li><span class="status skipped">⚠</span> <strong>{_h(check_label(c))}</strong>: '
            f"{_h(c.get('reason') or 'not computable')}</li>"
            for c in skipped
        ]
        out.append(f'<h3>Skipped gate checks</h3><ul class="gates">{"".join(items)}</ul>')
    return "".join(out)


def _charts(report: Mapping[str, Any], metrics: list[str]) -> str:
    cards = []
    for metric in metrics:
        agg = aggregate_for(report, metric)
        threshold = threshold_for(report, metric)
        sub = f"mean {fmt_num(agg.get('mean'))} · 95% CI {fmt_ci(agg)} · n {fmt_count(agg.get('n'))}"
        if threshold is not None:
            sub += f" · threshold {fmt_num(threshold)}"
        cards.append(
            f'<div class="card"><h3>{_h(metric)}</h3><p class="sub">{sub}</p>{_histogram(report, metric)}</div>'
        )
    out = f'<section id="distributions"><h2>Score distributions</h2><div class="grid">{"".join(cards)}</div></section>'
    categories = categories_of(report)
    if categories:
        cards = []
        for metric in metrics:
            notes = []
            for category in categories:
                check = find_check(report, metric, category)
                if check is not None:
                    icon = _ICONS.get(text_of(check.get("status")), "").strip()
                    notes.append(f"{_h(category)} {icon} (threshold {fmt_num(check.get('threshold'))})")
            sub = "mean per category, whisker = 95% CI"
            if notes:
                sub += " · own gate: " + ", ".join(notes)
            cards.append(
                f'<div class="card"><h3>{_h(metric)}</h3><p class="sub">{sub}</p>'
                f"{_category_bars(report, metric, categories)}</div>"
            )
        out += f'<section id="categories"><h2>By category</h2><div class="grid">{"".join(cards)}</div></section>'
    return out


def _score_badge(report: Mapping[str, Any], sample: Mapping[str, Any], metric: str) -> str:
    score = score_of(sample, metric)
    if score is None:
        reason = not_computable_reason(sample, metric)
        return f'<span class="sc na" title="{_h(reason)}">{NONE}</span>'
    threshold = threshold_for(report, metric)
    if threshold is None:
        cls = "plain"
    else:
        cls = "bad" if below_threshold(score, threshold) else "ok"
    return f'<span class="sc {cls}">{fmt_num(score)}</span>'


_MARKS = ('<span class="rv"><button type="button" class="right" data-mark="right" title="the judge is right (y)">'
          '✔ right</button><button type="button" class="wrong" data-mark="wrong" title="the judge is wrong (n)">'
          "✘ wrong</button></span>")


def _finding(finding: Mapping[str, Any], item: int | None = None) -> str:
    """One decided item: its verdict as a badge (good, bad, or graded), what it is, its text, P(yes); a
    review item (``item``: its index in the page's review data) with its right / wrong buttons."""
    ok = finding.get("ok")
    cls = "good" if ok is True else "bad" if ok is False else "plain"
    probability = finding.get("probability")
    p = f' <span class="p" title="the judge\'s probability of yes">P(yes) {fmt_num(probability)}</span>' \
        if is_number(probability) else ""
    head, marks = ("<li>", "") if item is None else (f'<li class="item" data-item="{item}">', _MARKS)
    return (f'{head}<span class="v {cls}">{_h(finding.get("verdict"))}</span><span class="lbl">'
            f"{_h(finding.get('label'))}</span> {_h(finding.get('text'))}{p}{marks}</li>")


def _score_item(metric: str, item: int | None) -> str:
    """The right / wrong buttons of a sample's score (a review item)."""
    if item is None:
        return ""
    return (f'<div class="item scoreitem" data-item="{item}">Is this {_h(metric)} score about right?'
            f"{_MARKS}</div>")


def _metric_detail(report: Mapping[str, Any], sample: Mapping[str, Any], metric: str, shown: list[str],
                   items: Mapping[str, int]) -> str:
    """The evidence behind one score for one sample (``shown``: the scores shown with it; ``items``: the
    sample's review item ids → their index in the page's review data)."""
    head = f"<h4>{_h(metric)}: {fmt_num(score_of(sample, metric))}"
    reason = not_computable_reason(sample, metric)
    if reason is not None:
        return f'{head} <span class="v na">not computable</span></h4><p class="nc">{_h(reason)}</p>'
    score_item = _score_item(metric, items.get(score_item_id(metric)))
    owner = score_owner(metric)
    first = next((m for m in shown if score_owner(m) == owner), metric)  # where the metric's evidence is shown
    if owner != metric:  # a score of a metric with several: its evidence is the metric's, shown once
        note = "; ".join(x for x in (score_description(metric), f"evidence under {first}" if first != metric else "")
                         if x)
        head += f" <small>({_h(note)})</small>" if note else ""
        if first != metric:
            return f"{head}</h4>{score_item}"
    summary = summary_of(sample, metric)
    if summary:
        head += f" <small>({_h(summary)})</small>"
    found = [_finding(f, items.get(finding_item_id(owner, k)) if isinstance(f.get("ok"), bool) else None)
             for k, f in enumerate(findings_of(sample, metric), 1)]
    body = f"<ul>{''.join(found)}</ul>" if found else ""
    detail = detail_for(sample, metric)
    if detail.get("reason"):  # a score set by rule: no contexts retrieved, an empty answer
        body = f'<p class="nc">{_h(detail["reason"])}</p>{body}'
    matrix = matrix_of(sample, metric)
    return f"{head}</h4>{score_item}{body}{_matrix(matrix) if matrix else ''}"


def _matrix(matrix: Mapping[str, Any]) -> str:
    """A verdict matrix (claims × chunks): one row per item with its own verdict, one cell per column
    coloured by the judge's verdict, with its P(yes)."""
    columns = [c for c in matrix.get("columns") or [] if isinstance(c, str)]
    head = "".join(f"<th>{_h(c)}</th>" for c in columns)
    rows = []
    for row in matrix["rows"]:
        if not isinstance(row, Mapping):
            continue
        ok = row.get("ok")
        cls = "good" if ok is True else "bad" if ok is False else "plain"
        cells = []
        for cell in row.get("cells") or []:
            cell = cell if isinstance(cell, Mapping) else {}
            yes, p = cell.get("yes") is True, cell.get("probability")
            title = f' title="P(yes) {fmt_num(p)}"' if is_number(p) else ""
            cells.append(f'<td class="c {"yes" if yes else "no"}"{title}>{"yes" if yes else "no"}'
                         f'{f" {fmt_num(p, 2)}" if is_number(p) else ""}</td>')
        rows.append(f'<tr><td class="t"><span class="lbl">{_h(row.get("label"))}</span> {_h(row.get("text"))}</td>'
                    f'<td><span class="v {cls}">{_h(row.get("verdict"))}</span></td>{"".join(cells)}</tr>')
    return (f'<table class="mx"><caption>{_h(matrix.get("title"))}</caption><thead><tr><th>item</th><th>verdict</th>'
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _sample_row(report: Mapping[str, Any], sample: Mapping[str, Any], metrics: list[str],
                review: Mapping[str, Any]) -> str:
    lang = text_of(sample.get("language"))
    lang_attr = f' lang="{_h(lang)}"' if lang in ("en", "zh") else ""
    question = text_of(sample.get("question"))
    cells = [
        f'<span class="id">{_h(sample.get("sample_id")) or NONE}</span>',
        f"<span>{_h(sample.get('category')) or NONE}</span>",
        f"<span>{_h(lang) or NONE}</span>",
        f'<span class="q" title="{_h(question)}">{_h(question)}</span>',
    ] + [_score_badge(report, sample, m) for m in metrics]
    texts = [("Question", sample.get("question")), ("Answer", sample.get("answer"))]
    if sample.get("reference_answer") is not None:
        texts.append(("Reference answer", sample.get("reference_answer")))
    dl = "".join(f'<dt>{label}</dt><dd><div class="txt">{_h(value)}</div></dd>' for label, value in texts)
    contexts = contexts_of(sample)
    if contexts:  # what a reviewer checks the claims against
        chunks = "".join(f'<li><div class="txt">{_h(c)}</div></li>' for c in contexts)
        dl += f'<dt>Retrieved chunks, in rank order</dt><dd><ol class="ctx">{chunks}</ol></dd>'
        n_ctx = ""
    else:
        n_ctx = (f"<p class=meta>{fmt_count(sample.get('n_contexts'))} retrieved chunks</p>"
                 if "n_contexts" in sample else "")
    sid = text_of(sample.get("sample_id"))
    items = review["items"].get(sid, {})
    details = "".join(_metric_detail(report, sample, m, metrics, items) for m in metrics)
    order = review["order"][sid]
    attrs = (f' data-order="{order}" data-doubt="{review["doubt"].get(sid, 1.0):.6f}" '
             f'data-rand="{review["rand"][sid]}"')
    return (
        f'<details class="sample"{lang_attr}{attrs}><summary class="row">{"".join(cells)}</summary>'
        f'<div class="ev"><dl>{dl}</dl>{n_ctx}{details}</div></details>'
    )


def _review_index(report: Mapping[str, Any], samples: list[Mapping[str, Any]]) -> dict[str, Any]:
    """What the page needs to review: the items (the JSON the script reads), each sample's item ids →
    item index, its report order, its least certain item (``doubt``) and its rank in a random order
    fixed by the review fingerprint (the same page always shuffles the same way)."""
    found = review_items(report)
    key = review_fingerprint(found)
    items: dict[str, dict[str, int]] = {}
    doubt: dict[str, float] = {}
    for n, item in enumerate(found):
        items.setdefault(item["sample_id"], {})[item["item"]] = n
        doubt[item["sample_id"]] = min(doubt.get(item["sample_id"], 1.0), item["doubt"])
    ids = [text_of(s.get("sample_id")) for s in samples]
    shuffled = sorted(ids, key=lambda sid: hashlib.sha256(f"{key}\0{sid}".encode("utf-8")).hexdigest())
    return {
        "key": key,
        "data": [{"s": i["sample_id"], "i": i["item"], "v": i["verdict"], "k": i["kind"], "m": i["metric"]}
                 for i in found],
        "items": items,
        "doubt": doubt,
        "order": {sid: n for n, sid in enumerate(ids)},
        "rand": {sid: n for n, sid in enumerate(shuffled)},
    }


def _samples(report: Mapping[str, Any], metrics: list[str], review: Mapping[str, Any]) -> str:
    samples = samples_of(report)
    head = ["sample", "category", "lang", "question"] + metrics
    head_html = "".join(
        f'<span class="num">{_wrappable(name)}</span>' if i >= 4 else f"<span>{_h(name)}</span>"
        for i, name in enumerate(head)
    )
    rows = "".join(_sample_row(report, s, metrics, review) for s in samples)
    return (
        '<section id="samples"><h2>Samples</h2>'
        '<div class="toolbar"><input id="q" type="search" '
        'placeholder="Filter samples by any text (id, question, answer, claims…)" '
        'aria-label="Filter samples" autocomplete="off">'
        '<label>order <select id="order" aria-label="Order of the samples">'
        '<option value="report">report order</option>'
        '<option value="doubt">most worth checking first</option>'
        '<option value="random">random (review top-down for PPI)</option></select></label>'
        '<label>show <select id="show" aria-label="Which samples to show">'
        '<option value="all">all samples</option><option value="open">with items to review</option>'
        '<option value="done">with reviewed items</option></select></label>'
        f'<button id="toggle" type="button">Expand all</button><span id="count">{len(samples)} samples</span></div>'
        f'<div class="samples"><div class="row head">{head_html}</div>{rows}</div></section>'
    )


def _review_bar(review: Mapping[str, Any]) -> str:
    """The review bar, always visible at the top: the count of marks, the reviewer, the export."""
    n = len(review["data"])
    return (
        '<div id="reviewbar" role="region" aria-label="Review"><strong>Review</strong>'
        f'<span id="rcount">0 of {n} items reviewed</span>'
        '<input id="reviewer" type="text" placeholder="your name (optional)" aria-label="Reviewer" '
        'autocomplete="off"><button id="export" type="button" title="Download the marks as labels.jsonl, for '
        'offline-eval agreement and evaluate --labels">Export labels.jsonl</button>'
        '<span class="keys"><kbd>j</kbd>/<kbd>k</kbd> next/previous item · <kbd>y</kbd> judge right · '
        '<kbd>n</kbd> judge wrong · <kbd>u</kbd> clear</span><span id="rstatus" role="status"></span></div>'
    )


def _json_data(value: Any) -> str:
    """JSON to embed in a <script type="application/json">: no "<", ">" or "&" appears raw, so no text in it
    can end the element ("</script>") or open a comment."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _skipped(report: Mapping[str, Any]) -> str:
    records = [r for r in report.get("skipped_records") or [] if isinstance(r, Mapping)]
    if not records:
        return ""
    rows = "".join(
        f"<tr><td><code>{_h(r.get('location'))}</code></td><td><ul>"
        + "".join(f"<li>{_h(p)}</li>" for p in r.get("problems") or [])
        + "</ul></td></tr>"
        for r in records
    )
    return (
        f'<section id="skipped"><h2>Skipped records ({len(records)})</h2>'
        f"<table><thead><tr><th>location</th><th>problems</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _run_info(report: Mapping[str, Any]) -> str:
    run = run_of(report)
    items: list[tuple[str, str]] = []
    judge = run_part(report, "judge")
    if judge:
        facts = [_h(judge.get("name")), _h(judge.get("backend") or NONE), f"n_ctx {_h(judge.get('n_ctx'))}",
                 f"sha256 <code>{_h(judge.get('sha256') or NONE)}</code>"]
        determinism = judge_determinism(report)
        items.append(("judge", " · ".join(facts + ([f'<span class="nc">{_h(determinism)}</span>'] if determinism
                                                   else []))))
    embedders = run_part(report, "embedders")
    for lang in sorted(embedders):
        emb = embedders[lang] if isinstance(embedders[lang], Mapping) else {}
        items.append(
            (f"embedder ({_h(lang)})", f"{_h(emb.get('name'))} · sha256 <code>{_h(emb.get('sha256') or NONE)}</code>")
        )
    data = run_part(report, "data")
    if data:
        items.append(
            ("data", f"<code>{_h(data.get('path'))}</code> · sha256 <code>{_h(data.get('sha256') or NONE)}</code>")
        )
    for key in ("seed", "language"):
        if key in run:
            items.append((key, _h(run.get(key))))
    params = run_part(report, "params")
    if params:
        items.append(("params", " · ".join(f"{_h(k)} {_h(params[k])}" for k in sorted(params))))
    usage = run_part(report, "usage")
    if usage:
        items.append(
            (
                "judge usage",
                f"{fmt_count(usage.get('judge_calls'))} calls · "
                f"{fmt_count(usage.get('prompt_tokens'))} prompt tokens · "
                f"{fmt_count(usage.get('completion_tokens'))} completion tokens",
            )
        )
    if not items:
        return ""
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f"<footer><h2>Run</h2><dl>{body}</dl></footer>"


@register("html", "report.html")
def render_html(report: Mapping[str, Any]) -> str:
    """report.html's text for ``report`` (a report.json dict). Deterministic: no clock, sorted where unordered."""
    metrics = metric_names(report)
    review = _review_index(report, samples_of(report))
    cols = "minmax(7rem,9rem) minmax(4rem,7rem) 2.5rem minmax(10rem,1fr)" + " 7.5rem" * len(metrics)
    css = _CSS + f".samples{{--cols:{cols}}}\n"
    csp = (
        f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(_JS)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    passed = gate_of(report).get("passed")
    title = {True: "passed", False: "failed"}.get(passed)
    page_title = "offline-eval report" + (f": gate {title}" if title else "")
    body = "".join(
        [
            _review_bar(review),
            _header(report),
            _summary(report, metrics),
            _charts(report, metrics),
            _samples(report, metrics, review),
            _skipped(report),
            _run_info(report),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{page_title}</title>\n<style>{css}</style>\n</head>\n"
        f"<body>\n{body}\n"
        f'<script type="application/json" id="review-data">{_json_data({"key": review["key"], "items": review["data"]})}'
        f"</script>\n<script>{_JS}</script>\n</body>\n</html>\n"
    )
