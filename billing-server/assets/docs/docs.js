// The API reference page: renders /openapi.json (served by this server) and sends requests with
// the key typed in the header (kept in this tab's sessionStorage only). No framework, nothing
// from the internet; every text is set with textContent.
"use strict";

let doc = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function resolve(schema) {
  let s = schema || {};
  for (let i = 0; i < 10 && s.$ref; i++) s = doc.components.schemas[s.$ref.split("/").pop()] || {};
  return s;
}

function typeName(schema) {
  const s = schema || {};
  if (s.$ref) return s.$ref.split("/").pop();
  const alts = s.anyOf || s.oneOf;
  if (alts) return alts.map(typeName).join(" | ");
  let t = Array.isArray(s.type) ? s.type.join(" | ") : s.type || "any";
  if (t.startsWith("array") || s.items) t = typeName(s.items) + "[]" + (Array.isArray(s.type) && s.type.includes("null") ? " | null" : "");
  if (s.format) t += " (" + s.format + ")";
  if (s.enum) t += ": " + s.enum.join(", ");
  return t;
}

// A schema's fields as a table; objects nested one level deeper are shown under their field.
function fieldsTable(schema, depth) {
  const s = resolve(schema);
  const props = s.properties || {};
  if (!Object.keys(props).length) return el("p", { class: "type", text: typeName(schema) });
  const required = s.required || [];
  const table = el("table", {}, el("tr", {}, el("th", { text: "field" }), el("th", { text: "type" }), el("th", { text: "about" })));
  for (const [name, p] of Object.entries(props)) {
    const row = el("tr", {},
      el("td", {}, el("code", { text: name }), required.includes(name) ? el("span", { class: "req", text: " required" }) : null),
      el("td", { class: "type", text: typeName(p) }),
      el("td", { text: p.description || resolve(p).description || "" }));
    table.append(row);
    const inner = innerObject(p);
    if (inner && depth < 2) table.append(el("tr", {}, el("td", { colspan: "3" }, el("div", { class: "nested" }, fieldsTable(inner, depth + 1)))));
  }
  return table;
}

function innerObject(p) {
  let s = p;
  const alts = s.anyOf || s.oneOf;
  if (alts) s = alts.find((a) => a.$ref || a.properties || a.items) || s;
  if (s.items) s = s.items;
  return s.$ref && resolve(s).properties ? s : null;
}

function operationSection(path, method, op) {
  const id = op.operationId;
  const sec = el("section", { class: "op", id });
  sec.dataset.search = (method + " " + path + " " + op.summary + " " + id).toLowerCase();
  sec.append(el("h2", {}, el("span", { class: "verb " + method, text: method.toUpperCase() }), el("span", { class: "path", text: path })));
  sec.append(el("p", { text: op.summary + " — " }, el("code", { text: id })));
  const params = op.parameters || [];
  if (params.length) {
    const t = el("table", {}, el("tr", {}, el("th", { text: "parameter" }), el("th", { text: "in" }), el("th", { text: "type" }), el("th", { text: "about" })));
    for (const p of params)
      t.append(el("tr", {},
        el("td", {}, el("code", { text: p.name }), p.required ? el("span", { class: "req", text: " required" }) : null),
        el("td", { text: p.in }), el("td", { class: "type", text: typeName(p.schema) }), el("td", { text: p.description || "" })));
    sec.append(el("h4", { text: "Parameters" }), t);
  }
  const body = op.requestBody && op.requestBody.content["application/json"];
  if (body) sec.append(el("h4", { text: "Request body: " + typeName(body.schema) }), fieldsTable(body.schema, 0));
  const ok = op.responses["200"].content["application/json"].schema;
  sec.append(el("h4", { text: "Response 200: " + typeName(ok) }), fieldsTable(ok, 0));
  sec.append(tryForm(path, method, op, params, body));
  return sec;
}

function tryForm(path, method, op, params, body) {
  const form = el("form", { class: "try" });
  form.append(el("h4", { text: "Try it" }));
  const inputs = {};
  for (const p of params.filter((p) => p.in === "path" || p.in === "query")) {
    const input = el("input", { name: p.name, placeholder: typeName(p.schema) });
    inputs[p.name] = [p, input];
    form.append(el("div", {}, el("label", {}, el("code", { text: p.name + " " }), input)));
  }
  let textarea = null;
  if (body) {
    textarea = el("textarea", { "aria-label": "request body" });
    textarea.value = JSON.stringify(body.example || {}, null, 2);
    form.append(textarea);
  }
  const out = el("pre", { class: "hidden" });
  form.append(el("button", { type: "submit", text: "Send" }), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    for (const [name, [p, input]] of Object.entries(inputs)) {
      if (!input.value) continue;
      if (p.in === "path") url = url.replace("{" + name + "}", encodeURIComponent(input.value));
      else for (const v of input.value.split(",")) query.append(name, v.trim());
    }
    if ([...query].length) url += "?" + query;
    const headers = { "content-type": "application/json" };
    const key = document.getElementById("key").value;
    const branch = document.getElementById("branch").value;
    if (key) headers["x-api-key"] = key;
    if (branch) headers["x-branch-id"] = branch;
    out.classList.remove("hidden");
    out.textContent = method.toUpperCase() + " " + url + " …";
    try {
      const r = await fetch(url, { method: method.toUpperCase(), headers, body: textarea ? textarea.value : undefined });
      const text = await r.text();
      let shown = text;
      try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* not JSON */ }
      out.textContent = r.status + " " + r.statusText + "\n\n" + shown;
    } catch (e) {
      out.textContent = "The request failed: " + e;
    }
  });
  return form;
}

function render() {
  document.getElementById("title").textContent = doc.info.title + " (v" + doc.info.version + ")";
  const main = document.getElementById("main");
  const toc = document.getElementById("toc");
  main.replaceChildren(el("p", { text: doc.info.description }), el("p", {}, "The document: ", el("a", { href: "/openapi.json", text: "/openapi.json" })));
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags || ["Other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push([path, method, op]);
    }
  for (const [tag, ops] of byTag) {
    toc.append(el("h3", { text: tag }));
    main.append(el("div", { class: "tag" }, el("h2", { text: tag })));
    for (const [path, method, op] of ops) {
      main.append(operationSection(path, method, op));
      const a = el("a", { href: "#" + op.operationId }, el("span", { class: "verb " + method, text: method.toUpperCase() }), op.summary);
      a.dataset.search = (method + " " + path + " " + op.summary + " " + op.operationId).toLowerCase();
      toc.append(a);
    }
  }
}

function setUpKey() {
  const key = document.getElementById("key");
  const branch = document.getElementById("branch");
  key.value = sessionStorage.getItem("x-api-key") || "";
  branch.value = sessionStorage.getItem("x-branch-id") || "";
  const show = () => { document.getElementById("keystate").textContent = key.value ? "key set" : ""; };
  key.addEventListener("input", () => { sessionStorage.setItem("x-api-key", key.value); show(); });
  branch.addEventListener("input", () => sessionStorage.setItem("x-branch-id", branch.value));
  show();
  document.getElementById("filter").addEventListener("input", (ev) => {
    const q = ev.target.value.toLowerCase();
    for (const e of document.querySelectorAll("[data-search]")) e.classList.toggle("hidden", q !== "" && !e.dataset.search.includes(q));
  });
}

document.addEventListener("DOMContentLoaded", async () => {
  setUpKey();
  try {
    doc = await (await fetch("/openapi.json")).json();
    render();
  } catch (e) {
    document.getElementById("main").textContent = "Could not load /openapi.json: " + e;
  }
});
