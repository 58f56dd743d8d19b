// Prints, as a JSON array, the URL imgproxy's official Node builder (@imgproxy/imgproxy-node)
// makes for each request of the JSON array on stdin:
//   {"endpoint", "source", "displayAs": "plain" | "base64", "options": {...}, "key"?, "salt"?}
// With key and salt the URL is signed by the library; without, it says `insecure`.
const { generateImageUrl } = require("@imgproxy/imgproxy-node");

const input = require("fs").readFileSync(0, "utf8");
const urls = JSON.parse(input).map((r) =>
  generateImageUrl({
    endpoint: r.endpoint,
    url: { value: r.source, displayAs: r.displayAs || "plain" },
    options: r.options,
    key: r.key,
    salt: r.salt,
  }),
);
process.stdout.write(JSON.stringify(urls));
