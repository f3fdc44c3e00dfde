// Embedded checkout (served by billing-server at /embed.js). One global:
//
//   var checkout = window.BillingCheckout.mount({
//     paymentLink: 'https://pay.example.com/pay/SHORT_ID',  // or just the short id (required)
//     container: '#checkout',                                // selector or element (required)
//     minHeightPx: 280, maxHeightPx: 920, vhCapPx: 800, vhFraction: 0.7
//   });
//   checkout.getIframe(); checkout.destroy();
//
// The iframe loads the link with ?embed=true. Its page reports its height and its redirects by
// postMessage; only messages from the checkout's origin and from this iframe are accepted. The
// iframe is as tall as its content, between minHeightPx and a ceiling of
// min(maxHeightPx, max(minHeightPx, min(vhCapPx, vhFraction × the window's height))); beyond
// it, the iframe scrolls. A redirect (success or failure URL, or the hosted result page) leaves
// the iframe: the embedding page navigates to it.
(function () {
  'use strict';
  var script = document.currentScript;
  var scriptOrigin = script && script.src ? new URL(script.src, window.location.href).origin : window.location.origin;

  function num(v, d) {
    return typeof v === 'number' && isFinite(v) ? v : d;
  }

  function mount(opts) {
    opts = opts || {};
    if (!opts.paymentLink || typeof opts.paymentLink !== 'string') throw new Error('BillingCheckout: paymentLink is required');
    var container = typeof opts.container === 'string' ? document.querySelector(opts.container) : opts.container;
    if (!container || !container.appendChild) throw new Error('BillingCheckout: container not found');
    var minH = num(opts.minHeightPx, 280);
    var maxH = num(opts.maxHeightPx, 920);
    var vhCap = num(opts.vhCapPx, 800);
    var vhFraction = num(opts.vhFraction, 0.7);

    var url = /^https?:\/\//i.test(opts.paymentLink)
      ? new URL(opts.paymentLink)
      : new URL('/pay/' + encodeURIComponent(opts.paymentLink), scriptOrigin);
    url.searchParams.set('embed', 'true');
    if (opts.language) url.searchParams.set('language', opts.language);
    var origin = url.origin;

    var iframe = document.createElement('iframe');
    iframe.src = url.toString();
    iframe.title = opts.title || 'Checkout';
    iframe.setAttribute('allow', 'payment');
    iframe.style.width = '100%';
    iframe.style.border = '0';
    iframe.style.display = 'block';
    var content = minH;

    function ceiling() {
      return Math.min(maxH, Math.max(minH, Math.min(vhCap, vhFraction * window.innerHeight)));
    }
    function resize() {
      iframe.style.height = Math.round(Math.max(minH, Math.min(content, ceiling()))) + 'px';
    }
    function onMessage(e) {
      if (e.origin !== origin || e.source !== iframe.contentWindow) return;
      var d = e.data;
      if (!d || typeof d !== 'object') return;
      if (d.type === 'billing-checkout:height' && typeof d.height === 'number') {
        content = d.height;
        resize();
      } else if (d.type === 'billing-checkout:redirect' && typeof d.url === 'string' && /^https?:\/\//i.test(d.url)) {
        window.location.assign(d.url);
      }
    }
    window.addEventListener('message', onMessage);
    window.addEventListener('resize', resize);
    resize();
    container.appendChild(iframe);

    return {
      getIframe: function () {
        return iframe;
      },
      destroy: function () {
        window.removeEventListener('message', onMessage);
        window.removeEventListener('resize', resize);
        if (iframe.parentNode) iframe.parentNode.removeChild(iframe);
      }
    };
  }

  window.BillingCheckout = { mount: mount };
})();
