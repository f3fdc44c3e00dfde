//! The words of the checkout pages (link, invoice, result and notice pages), in Arabic and
//! English, and how often a subscription renews, in words. No markup here: the templates place
//! them, and escape them like any other value.

use billing_core::fields::Language;
use billing_core::product::RecurringInterval;

/// What the page says, in one language.
pub struct Texts {
    pub checkout: &'static str,
    pub summary: &'static str,
    pub item: &'static str,
    pub qty: &'static str,
    pub amount: &'static str,
    pub subtotal: &'static str,
    pub discount: &'static str,
    pub vat: &'static str,
    pub vat_included: &'static str,
    pub total: &'static str,
    pub your_details: &'static str,
    pub name: &'static str,
    pub phone: &'static str,
    pub email: &'static str,
    pub pay_with: &'static str,
    pub card: &'static str,
    pub wallet: &'static str,
    pub card_number: &'static str,
    pub card_name: &'static str,
    pub expiry_month: &'static str,
    pub expiry_year: &'static str,
    pub cvc: &'static str,
    pub wallet_phone: &'static str,
    pub plan: &'static str,
    pub full: &'static str,
    pub two: &'static str,
    pub n_parts: &'static str,
    pub card_only: &'static str,
    pub pay: &'static str,
    pub processing: &'static str,
    pub redirecting: &'static str,
    pub form_error: &'static str,
    pub network_error: &'static str,
    pub inactive: &'static str,
    pub expired: &'static str,
    pub completed: &'static str,
    pub recurring: &'static str,
    pub no_payment: &'static str,
    pub not_found: &'static str,
    pub not_found_body: &'static str,
    pub paid_title: &'static str,
    pub paid_body: &'static str,
    pub failed_title: &'static str,
    pub failed_body: &'static str,
    pub internal_body: &'static str,
    pub try_again: &'static str,
    pub reference: &'static str,
    pub message: &'static str,
    pub other_language: &'static str,
    pub noscript: &'static str,
    /// The page's own words for a field the endpoint refused (by field id); a field without
    /// one shows the endpoint's message (English).
    field_errors: &'static [(&'static str, &'static str)],
    /// The page's own words for a refusal that is not a field error (by the envelope's code);
    /// a code without one shows the endpoint's `additional_info` (English).
    refusals: &'static [(&'static str, &'static str)],
    pub invoice: &'static str,
    pub paid_so_far: &'static str,
    pub pay_now: &'static str,
    pub invoice_paid: &'static str,
    pub invoice_canceled: &'static str,
    pub invoice_rejected: &'static str,
    pub invoice_closed: &'static str,
    pub no_gateway: &'static str,
    pub invoice_not_found: &'static str,
    pub decline: &'static str,
    pub decline_reason: &'static str,
    pub decline_button: &'static str,
    pub declining: &'static str,
    /// The summary's line of a subscription: when it renews.
    pub renews: &'static str,
    /// Under the pay button of a subscription's link: `{amount}` and `{every}` are filled in.
    pub subscription_consent: &'static str,
    /// Under the pay button of a subscription's invoice (card payments are kept for renewals).
    pub subscription_card_kept: &'static str,
}

const AR: Texts = Texts {
    checkout: "الدفع",
    summary: "ملخص الطلب",
    item: "المنتج",
    qty: "الكمية",
    amount: "المبلغ",
    subtotal: "المجموع الفرعي",
    discount: "خصم",
    vat: "ضريبة القيمة المضافة",
    vat_included: "ضريبة القيمة المضافة (مشمولة)",
    total: "الإجمالي",
    your_details: "بياناتك",
    name: "الاسم",
    phone: "رقم الجوال",
    email: "البريد الإلكتروني",
    pay_with: "طريقة الدفع",
    card: "بطاقة",
    wallet: "محفظة الجوال",
    card_number: "رقم البطاقة",
    card_name: "الاسم على البطاقة",
    expiry_month: "شهر الانتهاء",
    expiry_year: "سنة الانتهاء",
    cvc: "رمز الأمان",
    wallet_phone: "رقم جوال المحفظة",
    plan: "خطة الدفع",
    full: "دفعة واحدة",
    two: "دفعتان",
    n_parts: "دفعات",
    card_only: "التقسيط متاح بالبطاقة فقط.",
    pay: "ادفع",
    processing: "جارٍ معالجة الدفع…",
    redirecting: "جارٍ التحويل…",
    form_error: "يرجى تصحيح الحقول المشار إليها.",
    network_error: "تعذّر الاتصال بالخادم. حاول مرة أخرى.",
    inactive: "رابط الدفع هذا غير نشط.",
    expired: "انتهت صلاحية رابط الدفع هذا.",
    completed: "اكتمل رابط الدفع هذا ولم يعد يقبل مدفوعات.",
    recurring: "هذا الرابط لاشتراك بفترة تجريبية، ولا يمكن بدؤه هنا بعد.",
    no_payment: "لن يُخصم أي مبلغ.",
    not_found: "رابط الدفع غير موجود",
    not_found_body: "تحقق من العنوان أو اطلب رابطًا جديدًا من التاجر.",
    paid_title: "تم الدفع بنجاح",
    paid_body: "شكرًا لك، تم استلام دفعتك.",
    failed_title: "لم يتم الدفع",
    failed_body: "لم تنجح عملية الدفع، ولم يُخصم أي مبلغ. يمكنك المحاولة مرة أخرى.",
    internal_body: "حدث خطأ أثناء معالجة الدفع. تواصل مع الدعم: قد يكون المبلغ خُصم وقد لا يكون.",
    try_again: "حاول مرة أخرى",
    reference: "المرجع",
    message: "الرسالة",
    other_language: "English",
    noscript: "يتطلب الدفع تفعيل JavaScript.",
    field_errors: &[
        ("customer-name", "اكتب اسمك."),
        ("customer-phone_number", "اكتب رقم جوال صحيحًا بالصيغة الدولية، مثل ‎+966501234567."),
        ("customer-email", "اكتب بريدًا إلكترونيًا صحيحًا."),
        ("method-number", "رقم البطاقة غير صحيح."),
        ("method-name", "اكتب الاسم كما هو على البطاقة (كلمتان على الأقل)."),
        ("method-expiry_month", "شهر الانتهاء من 1 إلى 12."),
        ("method-expiry_year", "البطاقة منتهية الصلاحية أو السنة غير صحيحة."),
        ("method-cvc", "رمز الأمان 3 أرقام (4 لبطاقات أمريكان إكسبريس)."),
        ("method-phone_number", "اكتب رقم جوال المحفظة بالصيغة الدولية، مثل ‎+966501234567."),
    ],
    refusals: &[
        ("DUPLICATE_PAYMENT", "هذه الدفعة مدفوعة أو قيد المعالجة، فلن تُخصم مرة أخرى."),
        ("INVALID_STATUS", "لم يعد رابط الدفع هذا يقبل مدفوعات."),
        ("INVOICE_FINALISED", "هذه الفاتورة مغلقة أو مدفوعة جزئيًا، ولا تقبل هذا الإجراء."),
        ("INVOICE_INVALID_STATUS", "حالة الفاتورة لا تسمح بهذا الإجراء."),
        ("PAYMENT_FLOW_NOT_ALLOWED", "طريقة الدفع أو خطة الدفع هذه غير متاحة هنا."),
        ("INVALID_PARAMETERS", "خطة الدفع المختارة غير متاحة لهذا المبلغ."),
        ("RATE_LIMITED", "محاولات دفع فاشلة كثيرة. حاول مرة أخرى بعد 15 دقيقة."),
        ("NOT_FOUND", "لم يُعثر على ما تحاول دفعه."),
    ],
    invoice: "فاتورة رقم",
    paid_so_far: "المدفوع",
    pay_now: "المستحق الآن",
    invoice_paid: "تم دفع هذه الفاتورة بالكامل.",
    invoice_canceled: "أُلغيت هذه الفاتورة.",
    invoice_rejected: "تم رفض هذه الفاتورة.",
    invoice_closed: "لا يمكن دفع هذه الفاتورة.",
    no_gateway: "لا يستطيع هذا التاجر قبول الدفع بالبطاقة أو المحفظة بعد.",
    invoice_not_found: "الفاتورة غير موجودة",
    decline: "رفض هذه الفاتورة",
    decline_reason: "السبب (اختياري)",
    decline_button: "رفض الفاتورة",
    declining: "جارٍ رفض الفاتورة…",
    renews: "التجديد",
    subscription_consent: "بالدفع تبدأ اشتراكًا: يُخصم {amount} من هذه البطاقة {every} حتى تلغيه.",
    subscription_card_kept: "هذه الفاتورة لاشتراك: عند الدفع بالبطاقة تُحفظ البطاقة ويُخصم منها {amount} {every} حتى تلغي الاشتراك.",
};

const EN: Texts = Texts {
    checkout: "Checkout",
    summary: "Order summary",
    item: "Item",
    qty: "Qty",
    amount: "Amount",
    subtotal: "Subtotal",
    discount: "Discount",
    vat: "VAT",
    vat_included: "VAT (included)",
    total: "Total",
    your_details: "Your details",
    name: "Full name",
    phone: "Mobile number",
    email: "E-mail",
    pay_with: "Pay with",
    card: "Card",
    wallet: "Mobile wallet",
    card_number: "Card number",
    card_name: "Name on card",
    expiry_month: "Expiry month",
    expiry_year: "Expiry year",
    cvc: "Security code",
    wallet_phone: "Wallet phone number",
    plan: "How to pay",
    full: "Pay in full",
    two: "2 installments",
    n_parts: "installments",
    card_only: "Installments are paid by card.",
    pay: "Pay",
    processing: "Processing your payment…",
    redirecting: "Redirecting…",
    form_error: "Please correct the marked fields.",
    network_error: "Could not reach the server. Please try again.",
    inactive: "This payment link is not active.",
    expired: "This payment link has expired.",
    completed: "This payment link is completed: it takes no more payments.",
    recurring: "This link is for a subscription with a trial period, which cannot be started here yet.",
    no_payment: "No payment will be taken.",
    not_found: "Payment link not found",
    not_found_body: "Check the address, or ask the merchant for a new link.",
    paid_title: "Payment successful",
    paid_body: "Thank you, your payment was received.",
    failed_title: "Payment failed",
    failed_body: "The payment did not go through and nothing was charged. You can try again.",
    internal_body: "Something went wrong while processing the payment. Contact support: the amount may or may not have been charged.",
    try_again: "Try again",
    reference: "Reference",
    message: "Message",
    other_language: "العربية",
    noscript: "Paying needs JavaScript enabled.",
    field_errors: &[],
    refusals: &[],
    invoice: "Invoice No.",
    paid_so_far: "Paid so far",
    pay_now: "To pay now",
    invoice_paid: "This invoice is paid in full.",
    invoice_canceled: "This invoice was canceled.",
    invoice_rejected: "This invoice was declined.",
    invoice_closed: "This invoice cannot be paid.",
    no_gateway: "This merchant cannot take card or wallet payments yet.",
    invoice_not_found: "Invoice not found",
    decline: "Decline this invoice",
    decline_reason: "Reason (optional)",
    decline_button: "Decline the invoice",
    declining: "Declining the invoice…",
    renews: "Renews",
    subscription_consent: "Paying starts a subscription: {amount} is charged to this card {every} until you cancel it.",
    subscription_card_kept:
        "This invoice is for a subscription: paid by card, the card is kept and charged {amount} {every} until you cancel the subscription.",
};

pub fn texts(lang: Language) -> &'static Texts {
    match lang {
        Language::Ar => &AR,
        Language::En => &EN,
    }
}

impl Texts {
    /// The page's own words for a refused field (`data-msg` of the field's error line), if any.
    pub fn msg(&self, id: &str) -> Option<&'static str> {
        self.field_errors.iter().find(|(f, _)| *f == id).map(|(_, m)| *m)
    }

    /// The page's words for refusals as (attribute name after `data-refusal-`, text): the
    /// envelope's code in lower case with dashes (`DUPLICATE_PAYMENT` → `duplicate-payment`).
    pub fn refusal_attrs(&self) -> Vec<(String, &'static str)> {
        self.refusals
            .iter()
            .map(|(code, text)| (code.to_ascii_lowercase().replace('_', "-"), *text))
            .collect()
    }
}

/// How often a subscription renews, in words: "every month", "every 3 weeks", "شهريًا".
pub fn every(lang: Language, interval: RecurringInterval, n: u32) -> String {
    use RecurringInterval::*;
    match lang {
        Language::En => {
            let (one, many) = match interval {
                Week => ("week", "weeks"),
                Month => ("month", "months"),
                Quarter => ("quarter", "quarters"),
                Semester => ("6 months", "half-years"),
                Year => ("year", "years"),
            };
            if n == 1 {
                format!("every {one}")
            } else {
                format!("every {n} {many}")
            }
        }
        Language::Ar => match (interval, n) {
            (Week, 1) => "أسبوعيًا".into(),
            (Month, 1) => "شهريًا".into(),
            (Quarter, 1) => "كل ثلاثة أشهر".into(),
            (Semester, 1) => "كل ستة أشهر".into(),
            (Year, 1) => "سنويًا".into(),
            (Week, 2) => "كل أسبوعين".into(),
            (Month, 2) => "كل شهرين".into(),
            (Year, 2) => "كل سنتين".into(),
            (Week, n) => format!("كل {n} أسابيع"),
            (Month, n) => format!("كل {n} أشهر"),
            (Quarter, n) => format!("كل {} أشهر", 3 * n),
            (Semester, n) => format!("كل {} أشهر", 6 * n),
            (Year, n) => format!("كل {n} سنوات"),
        },
    }
}
