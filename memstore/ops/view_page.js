/* memstore view: renders the data embedded in this page. No framework, no network.
 *
 * Every list is paged (PAGE rows, then a "more" button), so a vault of 100k memories never
 * puts 100k rows in the DOM; search scans a lowercase copy of each item, built in slices
 * while the page is idle after it loads.
 * Text from the vault only ever reaches the page as textContent, never as HTML.
 */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("memstore-data").textContent);
  const PAGE = 200;
  /** A list of records sent as a table (ops/view_page.py pack): the keys once, a row each. */
  function records(table) {
    if (!table || Array.isArray(table)) return table || [];
    const columns = table.columns, n = columns.length;
    return table.rows.map((row) => {
      const record = {};
      for (let i = 0; i < n; i++) record[columns[i]] = row[i];
      return row.length > n ? Object.assign(record, row[n]) : record;
    });
  }
  const MEMORIES = records(DATA.memories);
  const CHANGES = records(DATA.changes);
  const SESSIONS = DATA.sessions || [];
  const QUEUES = DATA.queues || {};
  const VAULT = DATA.vault || {};
  const byId = new Map(MEMORIES.map((m) => [m.id, m]));
  const sessionById = new Map(SESSIONS.map((s) => [s.session, s]));
  const main = document.getElementById("main");
  const show = (...parts) => main.append(...parts.flat(Infinity).filter((p) => p != null && p !== false));
  const searchBox = document.getElementById("search");

  // ---- DOM helpers ------------------------------------------------------------------

  /** An element with properties (class, text, on<event>, attributes) and children. */
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value == null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid != null && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
    }
    return el;
  }

  function svg(tag, attrs, ...kids) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    for (const kid of kids) el.append(kid instanceof Node ? kid : String(kid));
    return el;
  }

  const PLURALS = { memory: "memories", entity: "entities" };
  const plural = (n, word) => `${n.toLocaleString("en")} ${n === 1 ? word : PLURALS[word] || word + "s"}`;
  const day = (iso) => (iso ? String(iso).replace("T", " ").slice(0, 16) : "");
  const link = (route, text) => h("a", { href: "#" + route }, text);

  function memoryLink(id) {
    return byId.has(id)
      ? h("a", { href: "#m/" + encodeURIComponent(id), class: "mem" }, id)
      : h("span", { class: "muted", title: "not in this view (forgotten or filtered out)" }, id);
  }

  function copy(text, button) {
    const done = () => { button.textContent = "copied"; };
    const fallback = () => {
      const area = h("textarea", {}, text);
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      done();
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else fallback();
  }

  /** A command to run, with a button that copies it. */
  function command(text) {
    const button = h("button", { type: "button", title: "copy the command" }, "copy");
    button.addEventListener("click", (event) => { event.preventDefault(); copy(text, button); });
    return h("span", { class: "command" }, h("code", { class: "cmd" }, text), " ", button);
  }

  /** Render `list` PAGE items at a time into a new element, with a "more" button. */
  function paged(list, render, emptyText) {
    const box = h("div", { class: "paged" });
    if (!list.length) {
      box.append(h("p", { class: "muted" }, emptyText || "Nothing here."));
      return box;
    }
    const rows = h("div", { class: "rows" });
    const more = h("button", { type: "button", class: "more" });
    let shown = 0;
    const step = () => {
      const part = document.createDocumentFragment();
      const end = Math.min(list.length, shown + PAGE);
      for (; shown < end; shown++) part.append(render(list[shown], shown));
      rows.append(part);
      const left = list.length - shown;
      // No button once nothing is left (a hidden one still reads "Show 0 more" as text).
      if (left === 0) return more.remove();
      more.textContent = `Show ${Math.min(PAGE, left)} more (${left.toLocaleString("en")} left)`;
      if (!more.isConnected) box.append(more);
    };
    more.addEventListener("click", step);
    box.append(rows);
    step();
    return box;
  }

  function select(name, values, current, onChange) {
    const el = h("select", { "aria-label": name, "data-filter": name },
      h("option", { value: "" }, `every ${name}`),
      values.map((v) => h("option", { value: v, selected: v === current }, v)));
    el.addEventListener("change", () => onChange(el.value));
    return el;
  }

  /** A line naming what the data capped (vault.sampled) among `keys`, or null. */
  function cappedNote(keys) {
    const said = (v) => (typeof v === "string" ? v : JSON.stringify(v));
    const notes = keys.filter((k) => VAULT.sampled && VAULT.sampled[k]).map((k) => `${k}: ${said(VAULT.sampled[k])}`);
    return notes.length ? h("p", { class: "warn capped" }, "Capped in this view: ", notes.join("; ")) : null;
  }

  const distinct = (items, key) => [...new Set(items.map(key).filter(Boolean))].sort();

  // ---- Changes (the timeline and a memory's history) -------------------------------

  function diffBlock(text) {
    if (!text) {
      return h("p", { class: "muted" },
        "No diff kept for this change (the view keeps full diffs for the newest changes).");
    }
    const pre = h("pre", { class: "diff" });
    for (const line of text.split("\n")) {
      const cls = line.startsWith("+++") || line.startsWith("---") || line.startsWith("@@")
        ? "h" : line.startsWith("+") ? "a" : line.startsWith("-") ? "d" : null;
      pre.append(cls ? h("span", { class: cls }, line) : line, "\n");
    }
    return pre;
  }

  /** The diff of a change that only added a memory's file (`c.added`): the file as the
   * page shows it (front matter and text, masked already), a '+' before each line, cut to
   * DIFF_LINES lines as the data cuts the diffs it holds (service/view_history.py). */
  const DIFF_LINES = 40;
  function addedDiff(c) {
    const m = c.added ? byId.get(c.added) : null;
    if (!m) return "";
    const file = m.front ? `---\n${m.front}---\n${m.text || ""}` : (m.text || "");
    const lines = file.split("\n");
    const ends = lines[lines.length - 1] === "";
    if (ends) lines.pop();
    const body = lines.map((line) => "+" + line);
    if (!ends) body.push("\\ No newline at end of file");
    const count = lines.length === 1 ? "1" : `1,${lines.length}`;
    let out = [`diff ${m.path}`, `@@ -0,0 +${count} @@`, ...body];
    // git's diff has 4 more header lines (new file mode, index, ---, +++), cut with the rest
    const all = out.length + 4;
    if (all > DIFF_LINES) out = [...out.slice(0, DIFF_LINES - 4), `… ${all - DIFF_LINES} more lines`];
    return out.join("\n");
  }

  function idLinks(ids) {
    const shown = (ids || []).slice(0, 6).map(memoryLink);
    const extra = (ids || []).length - shown.length;
    return [shown.flatMap((el, i) => (i ? [" ", el] : [el])), extra > 0 ? ` +${extra}` : null];
  }

  /** One change, its diff shown when opened (built only then). */
  function changeRow(index, withSession) {
    const c = CHANGES[index];
    const who = [c.author, withSession && c.session ? `session ${c.session}` : null,
      withSession && c.source ? c.source : null, c.host ? `on ${c.host}` : null];
    const row = h("details", { class: "change", "data-change": index, "data-kind": c.kind },
      h("summary", {},
        h("span", { class: "kind " + c.kind }, c.kind), " ",
        h("span", { class: "muted" }, day(c.time)), " ",
        h("span", { class: "subject" }, c.subject || ""), " ",
        h("span", { class: "muted" }, `${c.commit || ""} · ${who.filter(Boolean).join(" · ")}`), " ",
        idLinks(c.ids)));
    row.addEventListener("toggle", () => {
      if (row.open && !row.querySelector(".diff, p")) row.append(diffBlock(c.diff || addedDiff(c)));
    });
    return row;
  }

  let changeWorkspaces = null; // change index -> workspaces it touched, built on first use
  function workspacesOf(index) {
    if (!changeWorkspaces) {
      changeWorkspaces = CHANGES.map((c) =>
        new Set((c.ids || []).map((id) => byId.get(id)?.workspace).filter(Boolean)));
    }
    return changeWorkspaces[index];
  }

  const timelineFilter = { kind: "", source: "", host: "", workspace: "", text: "" };
  let newestFirst = null;

  /** Change indices, newest first, grouped by session (a session's place: its newest change). */
  function timelineRows() {
    if (!newestFirst) {
      newestFirst = CHANGES.map((_, i) => i);
      const time = (i) => CHANGES[i].time || "";
      newestFirst.sort((a, b) => (time(a) < time(b) ? 1 : time(a) > time(b) ? -1 : a - b));
    }
    const f = timelineFilter;
    const text = f.text.toLowerCase();
    const groups = new Map();
    for (const i of newestFirst) {
      const c = CHANGES[i];
      if ((f.kind && c.kind !== f.kind) || (f.source && c.source !== f.source) ||
          (f.host && c.host !== f.host) || (f.workspace && !workspacesOf(i).has(f.workspace)) ||
          (text && !`${c.subject} ${c.commit} ${c.session} ${c.author} ${(c.ids || []).join(" ")}`
            .toLowerCase().includes(text))) continue;
      const key = c.session ? "s:" + c.session : `a:${c.author || ""}|${c.host || ""}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(i);
    }
    const rows = [];
    for (const [key, members] of groups) {
      rows.push({ key, count: members.length });
      for (const i of members) rows.push({ key, change: i });
    }
    return { rows, changes: rows.length - groups.size, groups: groups.size };
  }

  function sessionHead(row) {
    if (row.key.startsWith("s:")) {
      const id = row.key.slice(2);
      const s = sessionById.get(id) || {};
      return h("div", { class: "session", "data-session": id },
        h("strong", {}, `session ${id}`),
        h("span", {}, `${s.source || "?"} on ${s.host || "?"}`),
        h("span", { class: "muted" }, `${day(s.first)} – ${day(s.last)}`),
        h("span", { class: "muted" }, `${plural(row.count, "change")} shown of ${s.changes ?? row.count}`),
        undoOf(s, id));
    }
    const [author, host] = row.key.slice(2).split("|");
    return h("div", { class: "session" },
      h("strong", {}, "no session"), h("span", {}, `${author || "unknown author"}${host ? " on " + host : ""}`),
      h("span", { class: "muted" }, `${plural(row.count, "change")}: edits by hand, syncs and merges`));
  }

  function timeline() {
    const list = h("div", { id: "timeline-list" });
    const summary = h("p", { class: "muted", id: "timeline-summary" });
    const refresh = () => {
      const { rows, changes, groups } = timelineRows();
      summary.textContent = `${plural(changes, "change")} in ${plural(groups, "group")} ` +
        `(of ${plural(CHANGES.length, "change")} and ${plural(SESSIONS.length, "session")}), newest first.`;
      list.replaceChildren(paged(rows, (row, k) => {
        if (!("change" in row)) return sessionHead(row);
        if (k % PAGE) return changeRow(row.change, false);
        // a page that starts inside a group names the group again
        const head = sessionHead(rows.findLast((r, j) => j < k && !("change" in r)));
        head.classList.add("continued");
        head.prepend(h("span", { class: "muted" }, "(continued)"));
        return h("div", {}, head, changeRow(row.change, false));
      }, "No change matches these filters."));
    };
    const set = (key) => (value) => { timelineFilter[key] = value; refresh(); };
    const text = h("input", { type: "search", placeholder: "subject, id, session, author",
      value: timelineFilter.text, "data-filter": "text" });
    text.addEventListener("input", () => set("text")(text.value));
    show(h("h2", {}, "Timeline"),
      h("p", { class: "muted" }, "Every change in the vault's git history, grouped by session: " +
        "the agent (source) and machine (host) that made it and the command that undoes it. " +
        "Open a change to see its diff."),
      h("div", { class: "filters" },
        select("kind", distinct(CHANGES, (c) => c.kind), timelineFilter.kind, set("kind")),
        select("source", distinct(CHANGES, (c) => c.source), timelineFilter.source, set("source")),
        select("host", distinct(CHANGES, (c) => c.host), timelineFilter.host, set("host")),
        select("workspace", VAULT.workspaces || distinct(MEMORIES, (m) => m.workspace),
          timelineFilter.workspace, set("workspace")),
        text),
      cappedNote(["changes", "diffs"]), summary, list);
    refresh();
  }

  // ---- A memory's page --------------------------------------------------------------

  /** Every memory linked to `start` by supersede, in columns from oldest to newest. */
  function chainOf(start) {
    const depth = new Map([[start.id, 0]]);
    const queue = [start.id];
    while (queue.length && depth.size < 60) {
      const id = queue.shift();
      const m = byId.get(id);
      if (!m) continue;
      for (const older of m.supersedes || []) {
        if (!depth.has(older)) { depth.set(older, depth.get(id) - 1); queue.push(older); }
      }
      for (const newer of m.superseded_by || []) {
        if (!depth.has(newer)) { depth.set(newer, depth.get(id) + 1); queue.push(newer); }
      }
    }
    const columns = new Map();
    for (const [id, d] of depth) {
      if (!columns.has(d)) columns.set(d, []);
      columns.get(d).push(id);
    }
    return [...columns.keys()].sort((a, b) => a - b).map((d) => columns.get(d));
  }

  function chainView(m) {
    const columns = chainOf(m);
    if (columns.length < 2) {
      return h("p", { class: "muted" }, "Not part of a supersede chain: it replaced nothing and nothing replaced it.");
    }
    const box = h("div", { class: "chain", "data-chain": columns.map((c) => c.join(",")).join(" > ") });
    columns.forEach((ids, k) => {
      if (k) box.append(h("span", { class: "arrow", title: "superseded by" }, "→"));
      box.append(h("div", { class: "col" }, ids.map((id) => {
        const other = byId.get(id);
        return h("div", { class: "node" + (id === m.id ? " here" : ""), "data-id": id },
          id === m.id ? h("strong", {}, id) : memoryLink(id),
          other?.archived ? h("span", { class: "tag" }, "archived") : null,
          h("div", { class: "muted" }, (other?.text || "").slice(0, 90)));
      })));
    });
    return h("div", {}, h("p", { class: "muted" }, "Older on the left, newer on the right."), box);
  }

  function memoryPage(id) {
    const m = byId.get(id);
    if (!m) {
      show(h("h2", {}, `No memory ${id} in this view`),
        h("p", { class: "muted" }, "It may be forgotten, or outside the workspace or date this view was built for."));
      return;
    }
    const tags = [m.workspace, m.kind, m.archived ? "archived" : null].filter(Boolean);
    const entities = new Set(m.entities || []);
    show(
      h("h2", { "data-memory": m.id }, m.id, " ", tags.map((t) => h("span", { class: "tag" }, t))),
      h("p", { class: "muted" },
        `Added ${day(m.created)} by ${m.source || "?"} on ${m.host || "?"} · ${m.path || ""}`),
      h("div", { class: "counts", id: "recall-counts" },
        [["seen", m.seen], ["recalled", m.recalled], ["confirmed", m.confirmed]].map(([name, n]) =>
          h("span", { "data-count": name }, h("b", {}, String(n ?? 0)), name)),
        h("span", {}, h("b", {}, m.last_recalled ? day(m.last_recalled).slice(0, 10) : "never"), "last recalled")),
      h("h3", {}, "Text"), h("pre", { class: "text" }, m.text || ""),
      h("h3", {}, "Front matter"), h("pre", { class: "front" }, m.front || ""),
      h("p", {}, "Keywords: ", (m.keywords || []).map((k) => h("span", { class: "tag" }, k)),
        " Entities: ", [...entities].map((e, k) => [k ? " " : null, link("search/" + encodeURIComponent(e), e)])),
      h("h3", {}, "Supersede chain"), chainView(m),
      h("h3", {}, `History (${plural((m.history || []).length, "change")})`),
      h("div", { id: "history" }, paged((m.history || []).slice().reverse(), (index) => historyRow(index),
        "No change to this memory is in the history this view read.")),
      h("h3", {}, "Neighbours by shared entities"),
      paged(m.neighbours || [], (other) => {
        const shared = (byId.get(other)?.entities || []).filter((e) => entities.has(e));
        return h("div", { class: "row", "data-neighbour": other }, memoryLink(other), " ",
          h("span", { class: "muted" }, shared.length ? `shares ${shared.join(", ")}` : ""), " ",
          h("span", { class: "snip" }, (byId.get(other)?.text || "").slice(0, 120)));
      }, "No other memory names the same entities."));
  }

  function historyRow(index) {
    const c = CHANGES[index];
    if (!c) return h("div", { class: "row muted" }, `change ${index} is not in this view`);
    return h("div", { class: "version", "data-change": index },
      changeRow(index, true),
      c.session ? h("div", { class: "muted" },
        link("timeline/" + encodeURIComponent(c.session), `session ${c.session} in the timeline`), " · undo it: ",
        undoOf(sessionById.get(c.session), c.session)) : null);
  }

  // The command that undoes a session, or why none is offered (a sync merge is not undone).
  function undoOf(s, id) {
    if (s && !s.undo) return h("span", { class: "muted no-undo" }, s.no_undo || "no undo offered");
    return command((s && s.undo) || `memstore revert --session ${id}`);
  }

  // ---- Health -----------------------------------------------------------------------

  const QUEUE_TITLES = {
    contradictions: "Contradictions",
    duplicates: "Near-duplicates",
    conflicts: "Conflicts kept both ways",
    stale: "Stale memories",
    stale_citations: "Cited code changed",
    never_recalled: "Never recalled",
    secrets: "Secrets found in files",
    core_over_budget: "Core memories over budget",
  };

  function queueItem(item) {
    const what = item.ids ? idLinks(item.ids)
      : item.id ? memoryLink(item.id)
        : h("code", {}, `${item.path || "?"}${item.line ? ":" + item.line : ""}`);
    return h("div", { class: "item" }, what, " ",
      item.kind ? h("span", { class: "tag" }, item.kind) : null, " ",
      h("span", {}, item.why || ""), h("div", {}, command(item.command || "")));
  }

  function health() {
    const names = [...Object.keys(QUEUE_TITLES), ...Object.keys(QUEUES).filter((q) => !(q in QUEUE_TITLES))];
    const total = names.reduce((n, q) => n + (QUEUES[q] || []).length, 0);
    show(h("h2", {}, "Health"),
      h("p", { class: "muted" }, `${plural(total, "item")} to look at, as memstore audit finds them; ` +
        "each with the command that settles it."),
      h("div", { class: "counts" }, names.map((q) =>
        h("a", { href: "#health", "data-queue-count": q, class: "count", onclick: (event) => {
          event.preventDefault(); // open that queue and bring it into view
          const queue = document.querySelector(`details[data-queue="${q}"]`);
          queue.open = true;
          queue.scrollIntoView();
        } }, h("b", {}, String((QUEUES[q] || []).length)), QUEUE_TITLES[q] || q))));
    for (const q of names) {
      const items = QUEUES[q] || [];
      show(h("details", { class: "queue", "data-queue": q, "data-count": items.length, open: items.length > 0 },
        h("summary", {}, `${QUEUE_TITLES[q] || q} (${items.length})`),
        cappedNote([`queue ${q}`, q]),
        paged(items, queueItem, "Nothing in this queue.")));
    }
  }

  // ---- The vault: sizes, growth, the entity graph -----------------------------------

  function bars(title, counts) {
    const rows = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
    const top = rows[0] ? rows[0][1] : 1;
    const box = h("div", { class: "bars", "data-bars": title });
    for (const [name, n] of rows.slice(0, 40)) {
      const fill = h("div", { class: "fill" });
      fill.style.width = `${(100 * n) / top}%`;
      box.append(h("div", { class: "bar" }, h("span", { class: "name", title: name }, name),
        h("div", {}, fill), h("span", {}, n.toLocaleString("en"))));
    }
    if (rows.length > 40) box.append(h("p", { class: "muted" }, `and ${rows.length - 40} more`));
    return h("div", {}, h("h3", {}, title), box);
  }

  function growthChart(growth) {
    if (!growth || !growth.length) return h("p", { class: "muted" }, "No dated memory.");
    const W = 900, H = 220, L = 50, B = 24;
    const total = Math.max(...growth.map((g) => g[2]), 1);
    const added = Math.max(...growth.map((g) => g[1]), 1);
    const step = (W - L - 10) / growth.length;
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", id: "growth",
      "aria-label": "memories added per month (bars) and in total (line)" });
    const y = (v, top) => H - B - ((H - B - 10) * v) / top;
    const points = growth.map((g, k) => `${L + step * (k + 0.5)},${y(g[2], total)}`).join(" ");
    growth.forEach((g, k) => {
      chart.append(svg("rect", { x: L + step * k + 1, y: y(g[1], added), width: Math.max(1, step - 2),
        height: H - B - y(g[1], added), fill: "#b6d4fe" }, svg("title", {}, `${g[0]}: ${g[1]} added, ${g[2]} in all`)));
    });
    chart.append(svg("polyline", { points, fill: "none", stroke: "#1f6feb", "stroke-width": 2 }));
    chart.append(svg("line", { x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: "#d9dee3" }));
    chart.append(svg("text", { x: 4, y: 16 }, total.toLocaleString("en")), svg("text", { x: 4, y: H - B }, "0"));
    for (const k of [0, Math.floor(growth.length / 2), growth.length - 1]) {
      chart.append(svg("text", { x: L + step * k, y: H - 6 }, growth[k][0]));
    }
    return h("div", {}, chart, h("p", { class: "muted" },
      `Line: memories in all (up to ${total.toLocaleString("en")}). ` +
      `Bars: added per month (up to ${added.toLocaleString("en")}).`));
  }

  let graphLayout = null; // positions, computed once
  /** A bounded force layout (Fruchterman-Reingold, repulsion only between grid neighbours). */
  function layoutGraph(nodes, edges) {
    const n = nodes.length;
    const x = new Float64Array(n), y = new Float64Array(n);
    const k = Math.sqrt(1e6 / Math.max(n, 1)); // ideal distance in a 1000x1000 square
    for (let v = 0; v < n; v++) { // a golden-angle spiral: deterministic and spread out
      const r = k * Math.sqrt(v + 0.5), a = v * 2.399963;
      x[v] = r * Math.cos(a); y[v] = r * Math.sin(a);
    }
    const iterations = Math.max(30, Math.min(200, Math.floor(4e5 / (n + edges.length + 1))));
    const fx = new Float64Array(n), fy = new Float64Array(n);
    const cell = 2 * k;
    for (let it = 0; it < iterations; it++) {
      fx.fill(0); fy.fill(0);
      const grid = new Map(); // cell number -> the nodes in it
      const cellOf = (gx, gy) => (gx + 32768) * 65536 + (gy + 32768);
      for (let v = 0; v < n; v++) {
        const key = cellOf(Math.floor(x[v] / cell), Math.floor(y[v] / cell));
        if (!grid.has(key)) grid.set(key, []);
        grid.get(key).push(v);
      }
      for (let v = 0; v < n; v++) {
        const cx = Math.floor(x[v] / cell), cy = Math.floor(y[v] / cell);
        for (let gx = cx - 1; gx <= cx + 1; gx++) for (let gy = cy - 1; gy <= cy + 1; gy++) {
          for (const u of grid.get(cellOf(gx, gy)) || []) {
            if (u === v) continue;
            const dx = x[v] - x[u], dy = y[v] - y[u], d2 = dx * dx + dy * dy || 0.01;
            if (d2 > cell * cell) continue; // the same reach every way: no drift to cell edges
            fx[v] += (dx * k * k) / d2; fy[v] += (dy * k * k) / d2;
          }
        }
      }
      for (const [a, b] of edges) {
        const dx = x[a] - x[b], dy = y[a] - y[b], d = Math.sqrt(dx * dx + dy * dy) || 0.01;
        const f = d / k;
        fx[a] -= dx * f; fy[a] -= dy * f; fx[b] += dx * f; fy[b] += dy * f;
      }
      const t = k * 2 * (1 - it / iterations) + 0.5; // the step shrinks: the layout settles
      for (let v = 0; v < n; v++) {
        fx[v] -= 0.02 * x[v]; fy[v] -= 0.02 * y[v]; // a little gravity keeps islands near
        const f = Math.sqrt(fx[v] * fx[v] + fy[v] * fy[v]) || 1;
        x[v] += (fx[v] / f) * Math.min(f, t); y[v] += (fy[v] / f) * Math.min(f, t);
      }
    }
    return { x, y, iterations };
  }

  /** The graph without its unlinked nodes: a memory naming no entity, an entity none of the
   * sampled memories names (a dot linked to nothing says nothing). */
  function linkedPart(allNodes, allEdges) {
    const edges = allEdges.filter(([a, b]) => allNodes[a] && allNodes[b]);
    const linked = new Set(edges.flat());
    const keep = allNodes.map((_, v) => linked.has(v));
    const index = [];
    const nodes = allNodes.filter((node, v) => keep[v] && index.push(v) > 0);
    const renumber = new Map(index.map((v, k) => [v, k]));
    return {
      nodes,
      edges: edges.map(([a, b]) => [renumber.get(a), renumber.get(b)]),
      alone: allNodes.length - nodes.length,
    };
  }

  function graphView() {
    const graph = DATA.graph || { nodes: [], edges: [] };
    const { nodes, edges, alone } = linkedPart(graph.nodes || [], graph.edges || []);
    if (!nodes.length) return h("p", { class: "muted" }, "No memory names an entity yet.");
    const started = performance.now();
    graphLayout = graphLayout || layoutGraph(nodes, edges);
    const { x, y } = graphLayout;
    const canvas = h("canvas", { id: "graph", "data-nodes": nodes.length, "data-edges": edges.length,
      "aria-label": "memories (blue) and the entities they name (orange)" });
    const W = 1100, H = 650, scale = window.devicePixelRatio || 1;
    canvas.width = W * scale; canvas.height = H * scale;
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (let v = 0; v < nodes.length; v++) {
      minX = Math.min(minX, x[v]); maxX = Math.max(maxX, x[v]);
      minY = Math.min(minY, y[v]); maxY = Math.max(maxY, y[v]);
    }
    const fit = Math.min((W - 40) / (maxX - minX || 1), (H - 40) / (maxY - minY || 1));
    const ox = (W - (maxX - minX) * fit) / 2, oy = (H - (maxY - minY) * fit) / 2; // centred
    const px = (v) => ox + (x[v] - minX) * fit, py = (v) => oy + (y[v] - minY) * fit;
    // an entity's area grows with how many memories name it, relative to the most named one
    const most = Math.max(1, ...nodes.map((node) => (node.type === "entity" ? node.size || 1 : 1)));
    const radius = (node) => (node.type === "entity" ? 3 + 9 * Math.sqrt((node.size || 1) / most) : 2.5);
    const ctx = canvas.getContext("2d");
    ctx.scale(scale, scale);
    ctx.strokeStyle = "rgba(95,107,119,0.18)";
    ctx.beginPath();
    for (const [a, b] of edges) { ctx.moveTo(px(a), py(a)); ctx.lineTo(px(b), py(b)); }
    ctx.stroke();
    nodes.forEach((node, v) => {
      ctx.fillStyle = node.type === "entity" ? "#e8912d" : "#1f6feb";
      ctx.beginPath(); ctx.arc(px(v), py(v), radius(node), 0, 2 * Math.PI); ctx.fill();
    });
    // A small graph names every node; a big one its 40 most named entities.
    const labelled = nodes.length <= 80 ? nodes.map((_, v) => v)
      : nodes.map((_, v) => v).filter((v) => nodes[v].type === "entity")
        .sort((a, b) => (nodes[b].size || 0) - (nodes[a].size || 0)).slice(0, 40);
    ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#1d232a";
    const placed = []; // label boxes drawn so far: a label that would overlap one is left out
    for (const v of labelled) {
      const text = String(nodes[v].label || nodes[v].id).slice(0, 40);
      const left = px(v) + radius(nodes[v]) + 2, top = py(v) - 8, width = ctx.measureText(text).width;
      if (placed.some((b) => left < b.right && b.left < left + width && top < b.top + 14 && b.top < top + 14)) continue;
      placed.push({ left, top, right: left + width });
      ctx.fillText(text, left, py(v) + 4);
    }
    canvas.addEventListener("click", (event) => {
      const box = canvas.getBoundingClientRect();
      const cx = ((event.clientX - box.left) * W) / box.width, cy = ((event.clientY - box.top) * H) / box.height;
      let best = -1, bestD = 12 * 12;
      nodes.forEach((_, v) => {
        const d = (px(v) - cx) ** 2 + (py(v) - cy) ** 2;
        if (d < bestD) { best = v; bestD = d; }
      });
      if (best < 0) return;
      const node = nodes[best];
      location.hash = (node.type === "memory" ? "#m/" : "#search/") + encodeURIComponent(node.id);
    });
    const memories = nodes.filter((node) => node.type === "memory").length;
    return h("div", {},
      h("p", { class: "muted", id: "graph-note" },
        `${plural(memories, "memory")} (blue) and ${plural(nodes.length - memories, "entity")} (orange, sized by ` +
        `how many memories name them), ${plural(edges.length, "link")}; laid out here in ` +
        `${graphLayout.iterations} steps (${Math.round(performance.now() - started)} ms). ` +
        (alone ? `${plural(alone, "node")} linked to nothing left out. ` : "") +
        (graph.sampled ? `Sampled: ${graph.note || "a part of the vault"}.` : (graph.note || "")) +
        " Click a node to open it."),
      canvas);
  }

  function vaultView() {
    const stats = DATA.stats || {};
    const sampled = Object.entries(VAULT.sampled || {});
    show(h("h2", {}, "The vault"),
      h("div", { class: "counts" },
        [["memories", MEMORIES.length], ["workspaces", Object.keys(stats.by_workspace || {}).length],
          ["changes", CHANGES.length], ["sessions", SESSIONS.length]].map(([name, n]) =>
          h("span", { "data-count": name }, h("b", {}, n.toLocaleString("en")), name))),
      cappedNote(sampled.map(([what]) => what)),
      bars("Workspaces by size", stats.by_workspace), bars("Kinds by size", stats.by_kind),
      h("h3", {}, "Growth"), growthChart(stats.growth),
      h("h3", {}, "Entity graph"), graphView());
  }

  // ---- Search -----------------------------------------------------------------------

  // The lowercase text each search scans, made once: in slices while the page is idle after
  // it loads, and whatever is left at the first search.
  let hayDone = 0;
  const HAY_TOTAL = MEMORIES.length + CHANGES.length;
  function buildHay(until) {
    for (; hayDone < HAY_TOTAL && hayDone < until; hayDone++) {
      if (hayDone < MEMORIES.length) {
        const m = MEMORIES[hayDone];
        m._hay = `${m.id} ${m.workspace} ${m.kind} ${(m.keywords || []).join(" ")} ` +
          `${(m.entities || []).join(" ")} ${m.text || ""}`.toLowerCase();
      } else {
        const c = CHANGES[hayDone - MEMORIES.length];
        c._hay = `${c.commit} ${c.subject || ""}`.toLowerCase();
      }
    }
  }
  function buildHayWhenIdle() {
    buildHay(hayDone + 5000);
    if (hayDone < HAY_TOTAL) setTimeout(buildHayWhenIdle, 0);
  }

  let byCreated = null;
  const newestMemories = () => (byCreated = byCreated ||
    MEMORIES.slice().sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : 0)));

  function memoryRow(m) {
    return h("div", { class: "row", "data-id": m.id }, memoryLink(m.id), " ",
      h("span", { class: "tag" }, m.workspace), h("span", { class: "tag" }, m.kind),
      m.archived ? h("span", { class: "tag" }, "archived") : null, " ",
      h("span", { class: "muted" }, `${day(m.created).slice(0, 10)} · recalled ${m.recalled ?? 0}`), " ",
      h("span", { class: "snip" }, (m.text || "").slice(0, 160)));
  }

  function searchView(query) {
    const results = h("div", { id: "search-results" });
    show(h("h2", {}, query ? `Search: ${query}` : "Memories"), results);
    buildHay(HAY_TOTAL);
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const match = (item) => words.every((w) => item._hay.includes(w));
    const memories = words.length ? newestMemories().filter(match) : newestMemories();
    const changes = words.length ? CHANGES.map((_, k) => k).filter((k) => match(CHANGES[k])) : [];
    results.append(
      h("p", { class: "muted", id: "search-count", "data-memories": memories.length, "data-changes": changes.length },
        words.length ? `${plural(memories.length, "memory")} and ${plural(changes.length, "change")} match.`
          : `All ${plural(memories.length, "memory")}; type in the search box to narrow them.`),
      paged(memories, memoryRow, "No memory matches."),
      words.length ? h("h3", {}, "Changes") : null,
      words.length ? paged(changes, (k) => changeRow(k, true), "No change subject matches.") : null);
  }

  // ---- Routing ----------------------------------------------------------------------

  function route() {
    const [tab, ...rest] = location.hash.slice(1).split("/");
    const arg = decodeURIComponent(rest.join("/"));
    main.replaceChildren();
    if (tab === "m") memoryPage(arg);
    else if (tab === "health") health();
    else if (tab === "vault") vaultView();
    else if (tab === "search") {
      if (rest.length) searchBox.value = arg;
      searchView(searchBox.value.trim());
    } else {
      if (tab === "timeline" && rest.length) timelineFilter.text = arg; // #timeline/<session>
      timeline();
    }
    for (const a of document.querySelectorAll("#tabs a")) {
      a.classList.toggle("on", a.dataset.tab === (tab === "m" ? "" : tab || "timeline"));
    }
    document.body.dataset.route = location.hash || "#timeline";
  }

  searchBox.addEventListener("input", () => {
    const q = searchBox.value.trim();
    const target = q ? "#search/" + encodeURIComponent(q) : "#search";
    if (location.hash === target) return;
    if (location.hash.startsWith("#search")) { // typing: one history entry, not one per key
      history.replaceState(null, "", target);
      route();
    } else location.hash = target;
  });

  document.getElementById("vault-line").textContent = [
    VAULT.path,
    plural(MEMORIES.length, "memory"),
    VAULT.workspace ? `workspace ${VAULT.workspace}` : null,
    VAULT.since ? `since ${VAULT.since}` : null,
    VAULT.generated ? `made ${day(VAULT.generated)}` : null,
  ].filter(Boolean).join(" · ");
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", (event) => { // "/" jumps to the search box
    if (event.key === "/" && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName || "")) {
      event.preventDefault();
      searchBox.focus();
    }
  });
  route();
  // How long until the page answered: read by the browser tests (tests/cli/test_view_browser.py).
  document.documentElement.dataset.interactiveMs = performance.now().toFixed(1);
  setTimeout(buildHayWhenIdle, 0);
})();
