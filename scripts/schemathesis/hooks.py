"""schemathesis hooks for review-server: every generated webhook delivery is signed, or
carries GitLab's token.

GitHub signs the raw body with HMAC-SHA256 of the webhook secret (X-Hub-Signature-256:
sha256=<hex>). Unsigned, every case would stop at the 401 and fuzz nothing behind it, so the
body is serialized here, once, and the signature computed over exactly the bytes sent. The
secret is FORGE_WEBHOOK_SECRET of the server under test (scripts/schemathesis.sh sets both).
GitLab sends its secret token itself (X-Gitlab-Token): GITLAB_WEBHOOK_SECRET, set the same way.
"""
import hashlib
import hmac
import json
import os

import schemathesis

SECRET = os.environ["FORGE_WEBHOOK_SECRET"].encode()
GITLAB_SECRET = os.environ["GITLAB_WEBHOOK_SECRET"]


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if case.operation.path == "/webhook/gitlab":
        # The generated token is replaced by the right one; a case that leaves the required
        # header out (the missing-header check) keeps it out and must get 401.
        if case.headers and "X-Gitlab-Token" in case.headers:
            case.headers["X-Gitlab-Token"] = GITLAB_SECRET
        return
    if case.operation.path != "/webhook/github":
        return
    if isinstance(case.body, bytes):
        body = case.body
    elif isinstance(case.body, (dict, list, str, int, float, bool, type(None))):
        body = json.dumps(case.body).encode()
    else:  # no body at all
        body = b""
    case.body = body
    if case.headers is None:
        case.headers = {}
    case.headers["X-Hub-Signature-256"] = (
        "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    )
