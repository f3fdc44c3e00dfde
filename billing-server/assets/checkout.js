// The hosted checkout's script (served by billing-server from /pay/assets/checkout.js; the
// Content-Security-Policy allows no other script). It sends the form to the JSON endpoint
// POST /pay/{short id}/attempts, shows progress and field errors (422 `detail`), then goes to the
// answer's redirect_url. Embedded (?embed=true), it reports its height and its redirects to the
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
    walletFields.hidden = !wallet;
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
    fetch(form.getAttribute('action'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body()),
      credentials: 'omit'
    })
      .then(function (r) {
        return r.json().then(
          function (j) { return { status: r.status, json: j }; },
          function () { return { status: r.status, json: {} }; }
        );
      })
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
          var e = res.json.error || {};
          showFormError(e.additional_info || e.message || form.getAttribute('data-network-error'));
        }
      })
      .catch(function () {
        done();
        showFormError(form.getAttribute('data-network-error'));
      });
  });
})();
