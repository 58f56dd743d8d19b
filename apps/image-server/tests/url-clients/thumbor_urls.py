"""Prints, as a JSON array, the URL thumbor's official builder (libthumbor) makes for each
request of the JSON array on stdin: {"key": "..." or null, "options": {...}}, the options
being libthumbor's keyword arguments (image_url, width, height, fit_in, crop, filters...).
With a key the URL is signed by CryptoURL; without, it is libthumbor's `unsafe` URL."""

import json
import sys

from libthumbor import CryptoURL
from libthumbor.url import unsafe_url


def build(request):
    options = dict(request["options"])
    if "crop" in options:
        options["crop"] = tuple(tuple(p) for p in options["crop"])
    if request.get("key"):
        return CryptoURL(key=request["key"]).generate(**options)
    return "/" + unsafe_url(**options)


print(json.dumps([build(r) for r in json.load(sys.stdin)]))
