"""The inline stylesheet of report.html (no font or image is fetched: system fonts only)."""

CSS = """
:root { --ink: #1d2733; --muted: #667382; --line: #dfe4ea; --bg: #f5f7fa; --bad: #c0392b;
  --ok: #2f9e5f; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 20px 48px; }
header, section { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 22px; margin: 0 0 18px; }
h1 { font-size: 22px; margin: 0 0 8px; } h1 span { font-weight: 500; color: var(--muted); }
h2 { font-size: 17px; margin: 0 0 12px; } h3 { font-size: 15px; margin: 14px 0 6px; }
small { color: var(--muted); font-weight: 400; }
.badge { display: inline-block; margin-left: 10px; padding: 1px 9px; border-radius: 999px;
  background: #e7eef9; color: #2a5ca8; font-size: 13px; font-weight: 600; vertical-align: 3px; }
.verdict { font-weight: 600; padding: 8px 12px; border-radius: 6px; margin: 6px 0 12px; }
.verdict.ok { background: #e6f4ec; color: #1e6b40; }
.verdict.bad { background: #fbeaea; color: #9b2c22; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0 0 10px; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
nav a, a { color: #2a5ca8; }
.notices { border-color: #f0c36d; background: #fffaf0; } .notices li { margin: 3px 0; }
.step { margin-bottom: 14px; }
svg.bar { display: block; width: 100%; height: 22px; border-radius: 5px; background: #eef1f4; }
.legend { margin-top: 6px; font-size: 13px; }
.key { display: inline-block; margin: 0 14px 2px 0; white-space: nowrap; }
.key i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 5px; vertical-align: 0; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
table.counts { margin-top: 16px; } th.n { text-align: right; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.total th, tr.total td { font-weight: 700; border-top: 2px solid var(--line); }
tr.bad td, tr.bad th { color: var(--bad); }
.reason { border: 1px solid var(--line); border-radius: 8px; margin: 10px 0; overflow: hidden; }
.rhead { display: flex; gap: 10px; align-items: baseline; padding: 8px 12px;
  background: #fafbfc; }
.count { min-width: 44px; text-align: right; font-weight: 700; color: var(--bad);
  font-variant-numeric: tabular-nums; }
.tag { display: inline-block; padding: 0 8px; border-radius: 4px; background: #eef1f4;
  font-size: 12.5px; white-space: nowrap; }
.rtext { overflow-wrap: anywhere; }
table.ex { font-size: 13px; table-layout: fixed; }
table.ex th { color: var(--muted); font-weight: 500; }
table.ex th:nth-child(1) { width: 70px; text-align: right; }
table.ex th:nth-child(2) { width: 16%; } table.ex th:nth-child(3) { width: 24%; }
table.ex th:nth-child(4) { width: 14%; } table.ex td { overflow-wrap: anywhere; }
.next { margin: 0; padding: 8px 12px; background: #f2f8f4; border-top: 1px solid var(--line);
  overflow-wrap: anywhere; }
.next code { background: #e3efe7; padding: 1px 5px; border-radius: 3px; }
code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
td code { background: #f3f0ff; padding: 1px 5px; border-radius: 3px; white-space: pre-wrap;
  overflow-wrap: anywhere; }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  overflow-x: auto; }
.muted, .msg { color: var(--muted); } .msg { overflow-wrap: anywhere; font-size: 12.5px; }
"""
