"""A client generated from the server's /openapi.json by openapi-python-client (PyPI) runs a
short scenario: create a consumer, a product and an invoice, and read them back. Run by
.ci/contract.sh:

    python3 generated_client.py <base URL> <x-api-key> <work directory>
"""

import importlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

base, key, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])

doc_path = work / "openapi.json"
doc_path.write_bytes(urllib.request.urlopen(base + "/openapi.json").read())
out = work / "client"
subprocess.run(
    ["openapi-python-client", "generate", "--path", str(doc_path), "--meta", "none", "--output-path", str(out / "billing_client"), "--overwrite"],
    check=True,
)
sys.path.insert(0, str(out))

client_mod = importlib.import_module("billing_client.client")
api = lambda name: importlib.import_module("billing_client.api." + name)  # noqa: E731
models = importlib.import_module("billing_client.models")

client = client_mod.AuthenticatedClient(base_url=base, token=key, prefix="", auth_header_name="x-api-key")


def check(cond, what):
    if not cond:
        raise AssertionError("generated client: " + what)
    print("ok:", what, flush=True)


consumer = api("consumers.create_customer").sync(client=client, body=models.ConsumerCreate(name="Sara Ali", email="sara.client@example.com"))
check(isinstance(consumer, models.ConsumerResponse) and consumer.name == "Sara Ali", "create a consumer")

product = api("products.create_product").sync(client=client, body=models.ProductCreate(name="Sessions", type_=models.ProductType.ONE_OFF, price="115"))
check(isinstance(product, models.ProductDto) and product.price == "115.00", "create a product")

invoice = api("invoices.create_invoice").sync(
    client=client,
    body=models.InvoiceCreate(organization_consumer_id=consumer.id, items=[models.InvoiceItemCreateDto(product_id=product.id, quantity=2)]),
)
check(isinstance(invoice, models.InvoiceDetailed) and invoice.total_amount == "230.00", "create an invoice (2 x 115.00)")

got = api("consumers.get_customer").sync(client=client, consumer_id=consumer.id)
check(got.email == "sara.client@example.com", "read the consumer back")
got = api("products.get_product").sync(client=client, product_id=product.id)
check(got.name == "Sessions", "read the product back")
got = api("invoices.get_invoice").sync(client=client, invoice_id=invoice.id)
check(got.id == invoice.id and got.organization_consumer_id == consumer.id and got.items[0].product_id == product.id, "read the invoice back with its item")
listed = api("invoices.list_invoices").sync(client=client, organization_consumer_id=consumer.id)
check([i.id for i in listed.data] == [invoice.id], "list the consumer's invoices")
refused = api("consumers.create_customer").sync(client=client, body=models.ConsumerCreate(name="X", email="not-an-email"))
check(isinstance(refused, models.HTTPValidationError) and refused.detail[0].loc == ["body", "email"], "a 422 is the typed HTTPValidationError")
print("client: 8 passed, 0 failed")
