// gitrag web page: plain JS, no build step, no external resources.
// Every value from the API is put into the page as text (textContent / text nodes), never as HTML.
"use strict";

(() => {
  const KEY_STORAGE = "gitrag.apiKey";
  const $ = (id) => document.getElementById(id);
  const state = { served: null, pending: null, seq: 0 };

  // -- small DOM helpers --------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function short(commit) {
    return commit ? commit.slice(0, 7) : "?";
  }

  function safeUrl(url) {
    if (!url) return null;
    try {
      const parsed = new URL(url, window.location.href);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (_) {
      return null;
    }
  }

  function sourceLink(text, url, attrs, path, commit) {
    // A page with a source URL (--base-url) links there; without one, the link shows the page as
    // the bundle of that commit holds it (POST /document), so every citation can be checked.
    const href = safeUrl(url);
    if (href) return el("a", { href, rel: "noopener noreferrer", ...(attrs || {}) }, text);
    if (!path) return el("span", attrs, text);
    const link = el("a", { href: "#", class: "doc-link", title: "Show this page as indexed", ...(attrs || {}) }, text);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      guarded(() => showDocument(path, commit));
    });
    return link;
  }

  async function showDocument(path, commit) {
    const previous = [...$("output").childNodes];
    setStatus("Loading the page…");
    const { body } = await api("POST", "/document", commit ? { path, at: commit } : { path });
    if (!body || body.status === "error") {
      setStatus("The page could not be shown.");
      return output(errorBox(body));
    }
    const doc = body.document;
    const back = el("button", { type: "button", class: "back" }, "← Back to the results");
    back.addEventListener("click", () => {
      output(previous);
      setStatus("");
    });
    setStatus("");
    output(el("article", { class: "document", id: "document" }, back,
      el("h2", {}, doc.title || doc.path),
      el("p", { class: "path" }, el("code", {}, doc.path), " · commit ", el("code", { title: doc.commit }, short(doc.commit))),
      el("pre", { class: "markdown" }, doc.markdown)));
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  function output(...nodes) {
    $("output").replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
  }

  // -- API ------------------------------------------------------------------------------------------

  class NeedKey extends Error {}

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (key) headers["X-API-Key"] = key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", cache: "no-store",
    });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (response.status === 401 || response.status === 403) {
      throw new NeedKey(data && data.message ? data.message : "A valid API key is required.");
    }
    return { http: response.status, body: data };
  }

  function askForKey(message, retry) {
    state.pending = retry;
    const box = $("keybox");
    box.hidden = false;
    const hint = box.querySelector("p");
    if (message && sessionStorage.getItem(KEY_STORAGE)) hint.textContent = message + " Type another key.";
    setStatus("An API key is needed.");
    $("key").focus();
  }

  async function guarded(action) {
    try {
      await action();
    } catch (error) {
      if (error instanceof NeedKey) askForKey(error.message, action);
      else setStatus("The server could not be reached.");
    }
  }

  // -- served commit and the commit selector ---------------------------------------------------

  async function loadHealth() {
    const { body } = await api("GET", "/health");
    const bundle = body && body.bundle;
    if (bundle) {
      showServed(bundle.commit, bundle.commit_summary, bundle.counts ? bundle.counts.documents : null);
    } else if (body && body.ready) {
      // A server with keys may show the bundle only to a client with a key: /bundles names it then.
      if (!state.served) $("served").replaceChildren("An index is served.");
    } else {
      state.served = null;
      $("served").replaceChildren("No index is served yet.");
    }
  }

  function showServed(commit, summary, documents) {
    state.served = commit;
    $("served").replaceChildren(
      "Serving commit ", el("code", { title: commit, id: "served-commit" }, short(commit)),
      summary ? ` — ${summary}` : "", typeof documents === "number" ? ` · ${documents} documents` : "");
  }

  async function loadBundles() {
    const { http, body } = await api("GET", "/bundles");
    if (http !== 200 || !body) return;
    const select = $("at");
    const chosen = select.value;
    const options = [el("option", { value: "" }, "the served commit (latest)")];
    for (const b of body.bundles) {
      if (b.served && b.commit !== state.served) showServed(b.commit, b.commit_summary, b.documents);
      if (b.served) continue;
      const date = b.commit_time ? new Date(b.commit_time * 1000).toISOString().slice(0, 10) : "";
      const label = `${short(b.commit)} · ${date} · ${b.commit_summary || ""}`.trim();
      options.push(el("option", { value: b.commit, title: b.commit }, label));
    }
    select.replaceChildren(...options);
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
  }

  // -- snippets -----------------------------------------------------------------------------------

  function markedSnippet(text) {
    // The server's snippet (query/snippets.py): the best-matching passage, Markdown syntax already
    // dropped, matched words between ** marks. An odd number of marks (a literal "**" in the page)
    // shows the text without marks rather than marking the wrong words.
    const parts = text.split("**");
    if (parts.length % 2 === 0) return text.replaceAll("**", "");
    const fragment = document.createDocumentFragment();
    parts.forEach((part, i) => fragment.append(i % 2 ? el("mark", {}, part) : part));
    return fragment;
  }

  // -- rendering --------------------------------------------------------------------------------

  function commitNote(body) {
    const commit = body && body.index_version ? body.index_version.commit : null;
    if (!commit) return null;
    const older = state.served && commit !== state.served;
    return el("p", { class: older ? "asof older" : "asof" },
      older ? "As of older commit " : "From commit ", el("code", { title: commit, class: "commit" }, short(commit)));
  }

  function errorBox(body) {
    const message = body && body.message ? body.message : "The request failed.";
    return el("div", { class: "notice error", role: "alert" }, el("strong", {}, "Error: "), message);
  }

  function truncationNote(body) {
    if (!body || !body.truncated) return null;
    return el("p", { class: "muted" }, `Some results were left out (${(body.truncation_reasons || []).join(", ")}).`);
  }

  function renderSearch(body) {
    if (!body || body.status === "error") return output(errorBox(body));
    const results = body.results || [];
    setStatus(results.length ? `${results.length} result${results.length === 1 ? "" : "s"}.` : "No results.");
    if (!results.length) {
      return output(commitNote(body), el("div", { class: "notice noanswer" },
        el("strong", {}, "No results. "), "No indexed page matches this query in this commit."));
    }
    const list = el("ol", { class: "results", id: "results" });
    const commit = body.index_version ? body.index_version.commit : null;
    for (const r of results) {
      const path = r.heading_path || [];
      const heading = (path[0] === r.title ? path.slice(1) : path).join(" › ");
      list.append(el("li", { class: "result" },
        el("h2", {}, sourceLink(r.title || r.document_path, r.source_url, { class: "result-link" },
          r.document_path, commit)),
        heading ? el("p", { class: "headings" }, heading) : null,
        el("p", { class: "snippet" }, markedSnippet(r.snippet || "")),
        el("p", { class: "path" }, el("code", {}, r.document_path), ` · ${r.source_id}`,
          // Found by the vector arm only: its words may not be in the snippet (query/hybrid.py match_kind).
          r.match === "semantic" ? el("span", { class: "match", title: "found by the vector (embedding) search "
            + "only, not by the query's words" }, " · matched by meaning") : null)));
    }
    output(commitNote(body), list, truncationNote(body));
  }

  function sourcesList(sources, commit) {
    if (!sources || !sources.length) return null;
    const list = el("ol", { class: "sources" });
    for (const s of sources) {
      list.append(el("li", { id: `src-${s.source_id}`, tabindex: "-1" },
        el("span", { class: "sid" }, `[${s.source_id}] `),
        sourceLink(s.title || s.document_path, s.source_url, null, s.document_path, commit),
        " ", el("code", {}, s.document_path)));
    }
    return el("section", { class: "sources-box", "aria-label": "Sources" }, el("h2", {}, "Sources"), list);
  }

  function withCitations(text, sources) {
    const known = new Set((sources || []).map((s) => s.source_id));
    const fragment = document.createDocumentFragment();
    for (const part of text.split(/(\[S\d+\])/)) {
      const id = part.startsWith("[S") ? part.slice(1, -1) : null;
      if (id && known.has(id)) {
        fragment.append(el("a", { href: `#src-${id}`, class: "cite", "aria-label": `source ${id}` }, part));
      } else {
        fragment.append(part);
      }
    }
    return fragment;
  }

  function coverageBox(coverage) {
    if (!coverage) return null;
    const warnings = coverage.warnings || [];
    const limits = coverage.limitations || [];
    const nodes = [];
    if (warnings.length) {
      nodes.push(el("div", { class: "notice warning", role: "note" }, el("strong", {}, "Warnings"),
        el("ul", {}, warnings.map((w) => el("li", {}, typeof w === "string" ? w : JSON.stringify(w))))));
    }
    if (limits.length) {
      nodes.push(el("div", { class: "notice", role: "note" }, el("strong", {}, "Limitations"),
        el("ul", {}, limits.map((w) => el("li", {}, typeof w === "string" ? w : JSON.stringify(w))))));
    }
    const scope = [coverage.scope, coverage.status].filter(Boolean).join(" · ");
    if (scope) nodes.push(el("p", { class: "muted" }, `Coverage: ${scope}`));
    return nodes;
  }

  function claimsBox(claims) {
    if (!claims || !claims.length) return null;
    return el("details", { class: "claims" }, el("summary", {}, `Checked claims (${claims.length})`),
      el("ol", {}, claims.map((c) => el("li", {}, c.text,
        el("span", { class: "muted" }, ` — ${(c.source_ids || []).join(", ")}`)))));
  }

  function noAnswerBox(body, title) {
    const message = body.message || "The indexed sources do not support an answer to this question.";
    return el("div", { class: "notice noanswer", role: "note" }, el("strong", {}, title), " ", message);
  }

  function table(caption, headers, rows) {
    return el("table", {}, caption ? el("caption", {}, caption) : null,
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell ?? "—"))))));
  }

  function worksTable(caption, works) {
    return table(caption, ["Type", "Year", "Title"], (works || []).map((w) => [
      w.type_label || w.type, w.year === null || w.year === undefined ? "—" : String(w.year),
      w.title === null || w.title === undefined ? el("em", {}, "title not recorded") : w.title]));
  }

  function graphTables(g) {
    const a = g.answer;
    const nodes = [];
    if (g.status === "ambiguous" && g.candidates) {
      nodes.push(table("Candidates", ["Person", "Started", "Works"], g.candidates.map((c) => [
        c.person, c.start_year === null ? "—" : String(c.start_year),
        (c.works || []).map((w) => `${w.type} ${w.year ?? ""} ${w.title ?? ""}`.trim()).join("; ")])));
    }
    if (!a) return nodes;
    const items = Array.isArray(a) ? a : Array.isArray(a.persons) && a.persons.length && typeof a.persons[0] === "object"
      ? a.persons : [a];
    for (const item of items) {
      if (Array.isArray(item.works)) {
        nodes.push(worksTable(item.person ? `Works of ${item.person}` : "Works", item.works));
      } else if (Array.isArray(item.titles) || (Array.isArray(item.years) && item.person)) {
        nodes.push(table(item.person, ["Type", "Years", "Titles"], [[
          [].concat(item.work_type || []).join(", "), (item.years || []).join(", ") || "—",
          (item.titles || []).join("; ") || (item.title_missing ? el("em", {}, "title not recorded") : "—")]]));
      } else if (typeof item.count === "number") {
        const names = item.persons || item.documents || [];
        nodes.push(el("p", { class: "count" }, el("strong", {}, `Count: ${item.count}`),
          g.aggregation && g.aggregation.complete ? " (exact)" : ""));
        if (names.length) nodes.push(el("ul", { class: "names" }, names.map((n) => el("li", {}, n))));
      } else if (Array.isArray(item.tags) || Array.isArray(item.topics)) {
        const values = item.topic_names || item.tags || item.topics;
        nodes.push(el("p", {}, el("strong", {}, item.tags ? "Tags: " : "Topics: "), values.join(", ") || "none"));
      } else if (Array.isArray(item.documents)) {
        nodes.push(el("p", {}, el("strong", {}, item.direction === "incoming" ? `Pages linking to ${item.title}` :
          `Pages ${item.title} links to`)), el("ul", { class: "names" }, item.documents.map((d) => el("li", {}, d))));
      }
    }
    if (!nodes.length && g.facts && g.facts.length) {
      nodes.push(table("Facts", ["Subject", "Relation", "Object", "Source"], g.facts.map((f) => [
        f.subject, f.predicate, typeof f.object === "object" ? JSON.stringify(f.object) : String(f.object),
        f.source_id || "—"])));
    }
    return nodes;
  }

  function renderGraph(g, note) {
    if (!g || g.status === "error") return output(errorBox(g));
    const nodes = [commitNote(g), note ? el("p", { class: "muted" }, note) : null];
    if (g.status === "no_answer") nodes.push(noAnswerBox(g, "No answer."));
    if (g.status === "ambiguous") nodes.push(noAnswerBox(g, "Ambiguous question."));
    nodes.push(...graphTables(g), sourcesList(g.sources, g.index_version ? g.index_version.commit : null));
    setStatus(g.status === "ok" ? "Answered from the knowledge graph." : "No answer.");
    output(...nodes);
  }

  function renderAnswer(body, graph) {
    if (!body || body.status === "error") return output(errorBox(body));
    const nodes = [commitNote(body)];
    if (body.status === "ok" && body.answer) {
      nodes.push(el("div", { class: "answer", id: "answer" }, withCitations(body.answer, body.sources)));
    } else if (body.status === "ambiguous") {
      nodes.push(noAnswerBox(body, "Ambiguous question."));
    } else {
      nodes.push(noAnswerBox(body, "No answer."));
    }
    // A graph answer also as tables: the graph's own facts for the same question and commit.
    if (graph && graph.status !== "error") nodes.push(...graphTables(graph));
    nodes.push(...(coverageBox(body.answer_coverage) || []));
    nodes.push(claimsBox(body.claims), sourcesList(body.sources, body.index_version ? body.index_version.commit : null));
    setStatus(body.status === "ok" ? "Answered." : "No answer.");
    output(...nodes);
  }

  // -- actions ------------------------------------------------------------------------------------

  function mode() {
    return document.querySelector('input[name="mode"]:checked').value;
  }

  async function run() {
    const query = $("q").value.trim();
    if (!query) return;
    const at = $("at").value || undefined;
    const asking = mode() === "ask";
    // Only the newest request may draw: an older one that answers late (say, the search started by
    // changing the commit) must not replace what the person asked for since.
    const mine = ++state.seq;
    const current = () => mine === state.seq;
    setStatus(asking ? "Asking…" : "Searching…");
    await loadHealth(); // the served commit may have changed since the page loaded
    if (!asking) {
      const { body } = await api("POST", "/search", { query, limit: 10, at });
      if (current()) renderSearch(body);
      return;
    }
    const answered = await api("POST", "/answer", { query, at, mode: "answer" });
    if (answered.http === 404 && answered.body && answered.body.reason === "not_found") {
      const { body } = await api("POST", "/graph", { question: query, at });
      if (current()) renderGraph(body, "This server has no /answer endpoint; the knowledge graph answered.");
      return;
    }
    let graph = null;
    if (current() && answered.body && answered.body.engine === "graph" && answered.body.status !== "error") {
      graph = (await api("POST", "/graph", { question: query, at })).body;
    }
    if (current()) renderAnswer(answered.body, graph);
  }

  function syncMode() {
    const ask = mode() === "ask";
    $("go").textContent = ask ? "Ask" : "Search";
    $("q").placeholder = ask ? "Ask a question" : "Search the knowledge base";
  }

  function start() {
    $("queryform").addEventListener("submit", (event) => {
      event.preventDefault();
      guarded(run);
    });
    for (const radio of document.querySelectorAll('input[name="mode"]')) radio.addEventListener("change", syncMode);
    $("at").addEventListener("change", () => {
      const value = $("at").value;
      setStatus(value ? `Searching as of commit ${short(value)}.` : "Searching the served commit.");
      if ($("q").value.trim()) guarded(run);
    });
    $("keyform").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(KEY_STORAGE, $("key").value.trim());
      $("key").value = "";
      $("keybox").hidden = true;
      $("forgetkey").hidden = false;
      const retry = state.pending;
      state.pending = null;
      guarded(async () => {
        await loadBundles();
        if (retry) await retry();
      });
      $("q").focus();
    });
    $("forgetkey").hidden = !sessionStorage.getItem(KEY_STORAGE);
    $("forgetkey").addEventListener("click", () => {
      sessionStorage.removeItem(KEY_STORAGE);
      $("forgetkey").hidden = true;
      setStatus("The API key was removed from this tab.");
    });
    document.addEventListener("keydown", (event) => {
      const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
      if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        setTimeout(() => $("q").focus(), 0); // after this key event, so the "/" is not typed into the box
      }
    });
    syncMode();
    guarded(async () => {
      await loadHealth();
      await loadBundles();
    });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
