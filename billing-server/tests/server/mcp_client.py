"""Drives the server's /mcp tool server with the official MCP client SDK (PyPI `mcp`), over
streamable HTTP, as an AI client would. Run by billing-server's `mcp::` tests:

    python3 mcp_client.py <base URL> <admin's x-api-key> <x-api-key scoped to branch B> <branch B id> <main branch id>

Prints one line per check and exits non-zero at the first one that fails.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

BASE, ADMIN_KEY, SCOPED_KEY, BRANCH_B, MAIN_BRANCH = sys.argv[1:6]
URL = BASE + "/mcp"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


async def session(headers, body):
    async with streamable_http_client(URL, http_client=create_mcp_http_client(headers=headers)) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as s:
            await s.initialize()
            return await body(s)


def result_json(r):
    return json.loads(r.content[0].text)


async def call(s, name, args):
    r = await s.call_tool(name, args)
    return r.is_error, result_json(r)


async def without_credentials(s):
    tools = await s.list_tools()
    names = {t.name for t in tools.tools}
    wanted = {
        "create_payment_link", "list_payment_links", "get_payment_link", "deactivate_payment_link",
        "create_customer", "list_customers", "get_customer", "update_customer", "delete_customer",
        "create_product", "list_products", "get_product", "update_product", "archive_product",
        "create_coupon", "list_coupons", "get_coupon", "deactivate_coupon",
        "create_invoice", "list_invoices", "get_invoice", "send_invoice", "void_invoice",
        "list_payments", "get_payment", "mark_payment_as_paid", "refund_payment",
        "list_subscriptions", "get_subscription", "create_subscription", "update_subscription",
        "cancel_subscription", "uncancel_subscription", "freeze_subscription", "search_api_docs",
    }
    check(wanted <= names, "tools/list has the public tool server's names (missing: %s)" % sorted(wanted - names))
    create = next(t for t in tools.tools if t.name == "create_customer")
    check("name" in create.input_schema["properties"] and "name" in create.input_schema["required"],
          "create_customer's input schema is ConsumerCreate's (name required)")
    refund = next(t for t in tools.tools if t.name == "refund_payment")
    reasons = refund.input_schema["$defs"]["PaymentRefundReason"]["enum"]
    check("REQUESTED_BY_CUSTOMER" in reasons and "payment_id" in refund.input_schema["required"],
          "refund_payment takes payment_id and refund_reason (an enum)")
    resources = await s.list_resources()
    uri = str(resources.resources[0].uri)
    doc = json.loads((await s.read_resource(uri)).contents[0].text)
    check(doc["openapi"] == "3.1.0" and "/api/v2/consumers" in doc["paths"], "the API description is a resource read without a credential")
    try:
        await s.call_tool("list_customers", {})
        check(False, "a tool call without a credential is refused")
    except MCPError as e:
        check("Unauthorized" in str(e), "a tool call without a credential is a protocol error: %s" % e)


async def wrong_key(s):
    try:
        await s.call_tool("create_customer", {"name": "Should Not Exist"})
        check(False, "a wrong key is refused")
    except MCPError as e:
        check("Unauthorized" in str(e), "a wrong key is a protocol error, nothing runs")


async def families(s):
    err, c = await call(s, "create_customer", {"name": "Sara Ali", "email": "sara.mcp@example.com", "phone_number": "+966501112233"})
    check(not err and c["name"] == "Sara Ali", "create_customer creates a consumer")
    err, got = await call(s, "get_customer", {"consumer_id": c["id"]})
    check(not err and got["email"] == "sara.mcp@example.com", "get_customer reads it back")
    err, lst = await call(s, "list_customers", {"search_term": "sara.mcp", "limit": 5})
    check(not err and [x["id"] for x in lst["data"]] == [c["id"]], "list_customers filters by search_term")
    err, upd = await call(s, "update_customer", {"consumer_id": c["id"], "alias": "S"})
    check(not err and upd["alias"] == "S", "update_customer changes a field")
    err, bad = await call(s, "create_customer", {"name": "X", "email": "not-an-email"})
    check(err and bad["status"] == 422 and bad["body"]["detail"][0]["loc"] == ["body", "email"],
          "the API's validation applies: a 422 at body.email as a tool error")

    err, p = await call(s, "create_product", {"name": "Sessions", "type": "ONE_OFF", "price": "115"})
    check(not err and p["price"] == "115.00", "create_product")
    err, monthly = await call(s, "create_product", {"name": "Monthly", "type": "RECURRING", "recurring_interval": "MONTH", "price": "50"})
    check(not err, "create_product (recurring)")
    err, lst = await call(s, "list_products", {"type": "ONE_OFF"})
    check(not err and p["id"] in [x["id"] for x in lst["data"]], "list_products with an enum filter")

    err, cp = await call(s, "create_coupon", {"name": "TEN", "discount_value": 10, "is_percentage": True})
    check(not err and cp["is_active"] is True, "create_coupon")
    err, off = await call(s, "deactivate_coupon", {"coupon_id": cp["id"]})
    check(not err and off["is_active"] is False, "deactivate_coupon")

    err, inv = await call(s, "create_invoice", {"organization_consumer_id": c["id"], "items": [{"product_id": p["id"], "quantity": 2}]})
    check(not err and inv["total_amount"] == "230.00", "create_invoice totals 2 x 115.00")
    err, sent = await call(s, "send_invoice", {"invoice_id": inv["id"]})
    check(not err and sent["status"] == "SENT", "send_invoice")
    err, pays = await call(s, "list_payments", {"invoice_id": [inv["id"]]})
    check(not err and len(pays["data"]) == 1, "list_payments by invoice")
    pay = pays["data"][0]["id"]
    err, marked = await call(s, "mark_payment_as_paid", {"payment_id": pay, "payment_method": "CASH"})
    check(not err, "mark_payment_as_paid: %s" % marked)
    err, got = await call(s, "get_payment", {"payment_id": pay})
    check(not err and got.get("current_status") == "SUCCEEDED", "get_payment shows it paid: %s" % got)
    err, ref = await call(s, "refund_payment", {"payment_id": pay, "refund_reason": "OTHER"})
    check(not err and ref.get("current_status") == "REFUNDED", "refund_payment: %s" % ref)
    err, inv2 = await call(s, "create_invoice", {"organization_consumer_id": c["id"], "items": [{"product_id": p["id"], "quantity": 1}]})
    err, void = await call(s, "void_invoice", {"invoice_id": inv2["id"]})
    check(not err and void["status"] == "CANCELED", "void_invoice")

    err, link = await call(s, "create_payment_link", {"name": "Sessions", "currency": "SAR", "items": [{"product_id": p["id"], "quantity": 1}]})
    check(not err and link["status"] == "ACTIVE" and link["url"], "create_payment_link")
    err, off = await call(s, "deactivate_payment_link", {"payment_link_id": link["id"]})
    check(not err and off["status"] == "INACTIVE", "deactivate_payment_link")

    err, sub = await call(s, "create_subscription", {"organization_consumer_id": c["id"], "items": [{"product_id": monthly["id"], "quantity": 1}], "period_start": "2030-01-01T00:00:00Z"})
    check(not err and sub["status"] == "INACTIVE", "create_subscription")
    err, lst = await call(s, "list_subscriptions", {"statuses": ["INACTIVE"]})
    check(not err and sub["id"] in [x["id"] for x in lst["data"]], "list_subscriptions")
    # Its first invoice paid (marked paid), it is ACTIVE and can be frozen.
    err, invs = await call(s, "list_invoices", {"subscription_id": sub["id"]})
    check(not err and len(invs["data"]) == 1, "list_invoices by subscription")
    err, pays = await call(s, "list_payments", {"invoice_id": [invs["data"][0]["id"]]})
    err, _ = await call(s, "mark_payment_as_paid", {"payment_id": pays["data"][0]["id"], "payment_method": "BANK_TRANSFER"})
    err, got = await call(s, "get_subscription", {"subscription_id": sub["id"]})
    check(not err and got["status"] == "ACTIVE", "get_subscription: ACTIVE once paid: %s" % got.get("status"))
    err, fr = await call(s, "freeze_subscription", {"subscription_id": sub["id"], "freeze_start_datetime": "2030-03-01T00:00:00Z", "freeze_end_datetime": "2030-04-01T00:00:00Z"})
    check(not err and fr.get("subscription_id") == sub["id"], "freeze_subscription: %s" % fr)
    err, upd = await call(s, "update_subscription", {"subscription_id": sub["id"], "description": "family plan", "items": [{"product_id": monthly["id"], "quantity": 1}], "coupons": []})
    check(not err and upd["description"] == "family plan", "update_subscription: %s" % upd.get("description"))
    err, can = await call(s, "cancel_subscription", {"subscription_id": sub["id"]})
    check(not err and can.get("cancel_at_period_end") is True, "cancel_subscription schedules the end: %s" % can.get("cancel_at_period_end"))
    err, un = await call(s, "uncancel_subscription", {"subscription_id": sub["id"]})
    err2, got = await call(s, "get_subscription", {"subscription_id": sub["id"]})
    check(not err and not err2 and got["cancel_at_period_end"] is False, "uncancel_subscription withdraws it")
    err, found = await call(s, "search_api_docs", {"query": "refund reason"})
    check(not err and found["results"][0]["tool"] == "refund_payment", "search_api_docs finds the refund")
    err, arch = await call(s, "archive_product", {"product_id": p["id"]})
    check(not err or arch["status"] == 400, "archive_product answers as DELETE /products/{id} does")
    return c["id"]


async def other_branch(s, consumer_in_main):
    # A key scoped to branch B: the main branch's consumer is not there, and naming the main
    # branch in x-branch-id is refused, as over HTTP.
    err, r = await call(s, "get_customer", {"consumer_id": consumer_in_main})
    check(err and r["status"] == 404, "a branch-scoped key does not see another branch's consumer")
    err, lst = await call(s, "list_customers", {})
    check(not err and consumer_in_main not in [x["id"] for x in lst["data"]], "nor lists it")


async def forbidden_branch(s, consumer_in_main):
    err, r = await call(s, "get_customer", {"consumer_id": consumer_in_main})
    check(err and r["status"] == 403 and r["body"]["error"]["code"] == "PERMISSION_FORBIDDEN",
          "x-branch-id naming a branch the key cannot use is a 403, as over HTTP")


async def main():
    await session({}, without_credentials)
    await session({"Authorization": "Bearer " + "d3Jvbmc6a2V5"}, wrong_key)
    admin = {"Authorization": "Bearer " + ADMIN_KEY}
    consumer = await session(admin, families)
    await session({"Authorization": "Bearer " + SCOPED_KEY}, lambda s: other_branch(s, consumer))
    await session({"Authorization": "Bearer " + SCOPED_KEY, "x-branch-id": MAIN_BRANCH}, lambda s: forbidden_branch(s, consumer))
    print("mcp client: all checks passed")


asyncio.run(main())
