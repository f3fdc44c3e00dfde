// The hosted checkout's script (served by billing-server from /pay/assets/checkout.js; the
// Content-Security-Policy allows no other script). It sends the form to the JSON endpoint
// POST {page}/attempts (a link's /pay/{short id} or an invoice's /pay/invoices/{id}), shows
// progress and field errors (422 `detail`), then goes to the answer's redirect_url. Other
// refusals show the page's own words for their code (data-refusal-<code>) when it has them, else
// the endpoint's. An invoice's page also posts its decline form to {page}/decline. Embedded (?embed=true), it reports its height and its redirects to the
// embedding page by postMessage instead (redirects leave the iframe).
(function () {
  'use strict';
  var embedded = document.body.getAttribute('data-embed') === 'true' && window.parent !== window;

  function post(msg) {
    if (embedded) window.parent.postMessage(msg, '*');
  }
  function reportHeight() {
    post({ type: 'billing-checkout:height', height: Math.ceil(document.body.getBoundingClientRect().height) });
  }
  if (embedded) {
    if (window.ResizeObserver) new ResizeObserver(reportHeight).observe(document.body);
    window.addEventListener('load', reportHeight);
    reportHeight();
  }
  function go(url) {
    if (embedded) post({ type: 'billing-checkout:redirect', url: url });
    else window.location.assign(url);
  }

  // The page's words for a refusal's code, else the endpoint's `additional_info`.
  function refusal(el, json) {
    var e = json.error || {};
    var code = String(e.code || '').toLowerCase().replace(/_/g, '-');
    return (code && el.getAttribute('data-refusal-' + code)) || e.additional_info || e.message || el.getAttribute('data-network-error');
  }
  function send(url, payload) {
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      credentials: 'omit'
    }).then(function (r) {
      return r.json().then(
        function (j) { return { status: r.status, json: j }; },
        function () { return { status: r.status, json: {} }; }
      );
    });
  }

  var decline = document.getElementById('decline-form');
  if (decline) {
    var declining = false;
    decline.addEventListener('submit', function (e) {
      e.preventDefault();
      if (declining) return;
      declining = true;
      var err = document.getElementById('decline-error');
      var progress = document.getElementById('decline-progress');
      var button = document.getElementById('decline-button');
      err.hidden = true;
      button.disabled = true;
      progress.textContent = decline.getAttribute('data-declining');
      var reason = document.getElementById('decline-reason').value.trim();
      send(decline.getAttribute('action'), reason ? { reason: reason } : {})
        .then(function (res) {
          if (res.status === 200) {
            go(decline.getAttribute('data-after'));
            return;
          }
          declining = false;
          button.disabled = false;
          progress.textContent = '';
          err.textContent = refusal(decline, res.json);
          err.hidden = false;
        })
        .catch(function () {
          declining = false;
          button.disabled = false;
          progress.textContent = '';
          err.textContent = decline.getAttribute('data-network-error');
          err.hidden = false;
        });
    });
  }

  // Quantities the payer chooses (link items that allow it): the page is loaded again, priced
  // with them (?quantity.<item id>=<n>), and the form sends them as `items`.
  var qtys = document.querySelectorAll('input.qty');
  function qtyQuery() {
    var q = '';
    for (var i = 0; i < qtys.length; i++) {
      q += '&quantity.' + encodeURIComponent(qtys[i].getAttribute('data-item')) + '=' + encodeURIComponent(qtys[i].value.trim());
    }
    return q;
  }
  for (var qi = 0; qi < qtys.length; qi++) {
    qtys[qi].addEventListener('change', function (e) {
      var n = parseInt(e.target.value, 10);
      var min = parseInt(e.target.getAttribute('min'), 10);
      var max = parseInt(e.target.getAttribute('max'), 10);
      if (isNaN(n) || n < min || n > max) return;
      var lang = document.documentElement.lang;
      window.location.assign(window.location.pathname + '?language=' + lang + (embedded ? '&embed=true' : '') + qtyQuery());
    });
  }

  var form = document.getElementById('pay-form');
  if (!form) return;
  var button = document.getElementById('pay-button');
  var progress = document.getElementById('progress');
  var formError = document.getElementById('form-error');
  var cardFields = document.getElementById('card-fields');
  var walletFields = document.getElementById('wallet-fields');
  var plans = document.getElementById('plans');
  var cardOnly = document.getElementById('card-only');
  var busy = false;

  function val(id) {
    var el = document.getElementById(id);
    return el ? el.value.trim() : '';
  }
  function methodType() {
    var w = document.getElementById('method-type-wallet');
    return w && w.checked ? 'wallet' : 'card';
  }
  function syncMethod() {
    var wallet = methodType() === 'wallet';
    cardFields.hidden = wallet;
    if (walletFields) walletFields.hidden = !wallet;
    if (plans) {
      var radios = plans.querySelectorAll('input[name="installments"]');
      for (var i = 0; i < radios.length; i++) {
        if (radios[i].value !== '1') radios[i].disabled = wallet;
        if (wallet && radios[i].value === '1') radios[i].checked = true;
      }
      if (cardOnly) cardOnly.hidden = !wallet;
    }
  }
  var methodRadios = form.querySelectorAll('input[name="method-type"]');
  for (var i = 0; i < methodRadios.length; i++) methodRadios[i].addEventListener('change', syncMethod);
  syncMethod();

  function clearErrors() {
    formError.hidden = true;
    formError.textContent = '';
    var errs = form.querySelectorAll('.field-error');
    for (var i = 0; i < errs.length; i++) errs[i].textContent = '';
    var bad = form.querySelectorAll('[aria-invalid="true"]');
    for (var j = 0; j < bad.length; j++) bad[j].removeAttribute('aria-invalid');
  }
  function showFormError(text) {
    formError.textContent = text;
    formError.hidden = false;
  }
  function done() {
    busy = false;
    button.disabled = false;
    progress.textContent = '';
  }

  function body() {
    var b = { language: form.getAttribute('data-language'), installments: 1 };
    if (document.getElementById('customer-name')) {
      var c = { name: val('customer-name') };
      if (document.getElementById('customer-phone_number')) c.phone_number = val('customer-phone_number');
      if (document.getElementById('customer-email')) c.email = val('customer-email');
      b.customer = c;
    }
    if (methodType() === 'wallet') {
      b.method = { type: 'wallet', phone_number: val('method-phone_number') };
    } else {
      var month = parseInt(val('method-expiry_month'), 10);
      var year = parseInt(val('method-expiry_year'), 10);
      b.method = {
        type: 'card',
        number: val('method-number'),
        name: val('method-name'),
        expiry_month: isNaN(month) ? val('method-expiry_month') : month,
        expiry_year: isNaN(year) ? val('method-expiry_year') : year,
        cvc: val('method-cvc')
      };
    }
    if (qtys.length) {
      b.items = [];
      for (var q = 0; q < qtys.length; q++) {
        b.items.push({ payment_link_item_id: qtys[q].getAttribute('data-item'), quantity: parseInt(qtys[q].value, 10) });
      }
    }
    var plan = form.querySelector('input[name="installments"]:checked');
    if (plan) b.installments = parseInt(plan.value, 10);
    return b;
  }

  function showDetail(detail) {
    var first = null;
    var unplaced = [];
    for (var i = 0; i < detail.length; i++) {
      var loc = (detail[i].loc || []).slice(1);
      var id = loc.join('-');
      var err = document.getElementById('err-' + id);
      var input = document.getElementById(id);
      if (err && input) {
        // The page's own words when it has them (Arabic), else the endpoint's message.
        err.textContent = err.getAttribute('data-msg') || String(detail[i].msg || '').replace(/^Value error, /, '');
        input.setAttribute('aria-invalid', 'true');
        if (!first) first = input;
      } else {
        unplaced.push(String(detail[i].msg || ''));
      }
    }
    showFormError(form.getAttribute('data-form-error') + (unplaced.length ? ' ' + unplaced.join(' ') : ''));
    if (first) first.focus();
  }

  form.addEventListener('submit', function (e) {
    e.preventDefault();
    if (busy) return;
    busy = true;
    clearErrors();
    button.disabled = true;
    progress.textContent = form.getAttribute('data-processing');
    send(form.getAttribute('action'), body())
      .then(function (res) {
        if (res.status === 200 && res.json.redirect_url) {
          progress.textContent = form.getAttribute('data-redirecting');
          go(res.json.redirect_url);
          return;
        }
        done();
        if (res.status === 422 && Array.isArray(res.json.detail)) {
          showDetail(res.json.detail);
        } else {
          showFormError(refusal(form, res.json));
        }
      })
      .catch(function () {
        done();
        showFormError(form.getAttribute('data-network-error'));
      });
  });
})();
