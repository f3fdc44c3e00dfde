"""A real SMTP server for the notification tests (aiosmtpd): every message it accepts is
written to OUTDIR as NNNN.json with its envelope, its authenticated user, its decoded headers
and its text and HTML parts. It prints READY once it listens and stops when its standard input
closes.

    python3 smtp_sink.py OUTDIR PORT [--auth USER:PASSWORD] [--starttls CERT KEY]
"""

import json
import os
import ssl
import sys
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from email import policy
from email.parser import BytesParser


def main():
    # Plain-text AUTH is what the tests want to see (a local server only).
    warnings.filterwarnings("ignore", message="Requiring AUTH while not requiring TLS")
    outdir, port = sys.argv[1], int(sys.argv[2])
    args = sys.argv[3:]
    auth = None
    tls = None
    while args:
        if args[0] == "--auth":
            auth = tuple(args[1].split(":", 1))
            args = args[2:]
        elif args[0] == "--starttls":
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(args[1], args[2])
            args = args[3:]
        else:
            raise SystemExit("unknown argument " + args[0])

    class Handler:
        count = 0

        async def handle_DATA(self, server, session, envelope):
            Handler.count += 1
            msg = BytesParser(policy=policy.default).parsebytes(envelope.original_content)
            plain = msg.get_body(("plain",))
            html = msg.get_body(("html",))
            record = {
                "mail_from": envelope.mail_from,
                "rcpt_tos": envelope.rcpt_tos,
                "authenticated": bool(session.authenticated),
                "auth_user": session.auth_data.decode() if isinstance(session.auth_data, bytes) else None,
                "tls": session.ssl is not None,
                "from": str(msg["From"]),
                "to": str(msg["To"]),
                "subject": str(msg["Subject"]),
                "message_id": str(msg["Message-ID"]),
                "content_type": msg.get_content_type(),
                "text": plain.get_content() if plain is not None else None,
                "html": html.get_content() if html is not None else None,
            }
            path = os.path.join(outdir, "%04d" % Handler.count)
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(record, f, ensure_ascii=False)
            os.rename(path + ".tmp", path + ".json")
            return "250 OK queued as %d" % Handler.count

    def authenticator(server, session, envelope, mechanism, auth_data):
        if isinstance(auth_data, LoginPassword) and auth is not None:
            if (auth_data.login.decode(), auth_data.password.decode()) == auth:
                return AuthResult(success=True, auth_data=auth_data.login)
        return AuthResult(success=False, handled=False)

    kwargs = {}
    if auth is not None:
        kwargs.update(authenticator=authenticator, auth_required=True, auth_require_tls=tls is not None)
    if tls is not None:
        kwargs.update(tls_context=tls, require_starttls=True)
    controller = Controller(Handler(), hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    print("READY", flush=True)
    sys.stdin.read()
    controller.stop()


if __name__ == "__main__":
    main()
