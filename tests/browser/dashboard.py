"""The dashboard of `redis-patterns dashboard` in headless Chromium, through chromedriver's
W3C WebDriver HTTP API (the standard library only: urllib and json).

`.ci/dashboard` starts the servers, fills them and starts the dashboards; this script
opens the pages as a person would, acts, and checks the result in Redis through the
command's own `queue … job --json`. A screenshot of each page goes to the folder given.

    python3 tests/browser/dashboard.py --bin B --redis URL --dashboard URL_WITH_TOKEN \
        --read-only URL --cluster-redis URL --cluster-dashboard URL --shots DIR
"""

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
XSS = "<script>alert(1)</script>"
XSS_LOG = "<img src=x onerror=alert(2)>"


def fail(message):
    print(f"dashboard.py: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print(f"  ok  {message}")


def http(method, url, body=None, headers=None, timeout=30):
    """(status, headers, text) of a request; redirects are not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    data = None if body is None else body.encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read().decode()


class Browser:
    """A chromedriver session: the few WebDriver commands the test needs."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        options = {"args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                            "--window-size=1280,1000"]}
        for binary in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
            if os.path.exists(binary):
                options["binary"] = binary
                break
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": options}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, payload=None):
        url = self.base + path
        body = None if payload is None else json.dumps(payload)
        status, _, text = http(method, url, body, {"Content-Type": "application/json"}, 60)
        value = json.loads(text)["value"] if text else None
        if status != 200:
            raise RuntimeError(f"webdriver {method} {path}: {status} {value}")
        return value

    def s(self, path):
        return f"/session/{self.session}{path}"

    def get(self, url):
        self.call("POST", self.s("/url"), {"url": url})

    def url(self):
        return self.call("GET", self.s("/url"))

    def finds(self, css):
        found = self.call("POST", self.s("/elements"), {"using": "css selector", "value": css})
        if found and ELEMENT not in found[0]:
            fail(f"unexpected element reply {found!r}")
        return [e[ELEMENT] for e in found]

    def find(self, css):
        found = self.finds(css)
        if not found:
            text = self.call("POST", self.s("/elements"), {"using": "css selector", "value": "body"})
            body = self.call("GET", self.s(f"/element/{text[0][ELEMENT]}/text")) if text else ""
            fail(f"no element {css!r} on {self.url()}, which reads:\n{body}")
        return found[0]

    def text(self, css):
        return self.call("GET", self.s(f"/element/{self.find(css)}/text"))

    def wait_for(self, css, seconds=10.0):
        """Waits for an element: a form's POST answers with a new page after the click returned."""
        deadline = time.monotonic() + seconds
        while not self.finds(css):
            if time.monotonic() > deadline:
                self.find(css)  # fails, showing the page
            time.sleep(0.05)

    def click(self, css):
        self.call("POST", self.s(f"/element/{self.find(css)}/click"), {})

    def source(self):
        return self.call("GET", self.s("/source"))

    def alert_open(self):
        try:
            self.call("GET", self.s("/alert/text"))
            return True
        except RuntimeError as err:
            if "no such alert" in str(err):
                return False
            raise

    def screenshot(self, path):
        with open(path, "wb") as out:
            out.write(base64.b64decode(self.call("GET", self.s("/screenshot"))))
        print(f"  screenshot {path}")

    def quit(self):
        self.call("DELETE", self.s(""))


def job(bin_path, redis, queue, job_id, cluster=False):
    """The job as Redis holds it, through the command's own `queue … job --json`."""
    args = [bin_path, "queue", queue, "job", job_id, "--json", "--url", redis]
    if cluster:
        args.append("--cluster")
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_chromedriver():
    port = free_port()
    driver = subprocess.Popen([shutil.which("chromedriver"), f"--port={port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            status, _, text = http("GET", f"http://127.0.0.1:{port}/status", timeout=2)
            if status == 200 and json.loads(text)["value"]["ready"]:
                return driver, port
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    driver.kill()
    fail("chromedriver did not start")


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--bin", "--redis", "--dashboard", "--read-only", "--cluster-redis",
                 "--cluster-dashboard", "--shots"):
        parser.add_argument(flag, required=True)
    a = parser.parse_args()
    os.makedirs(a.shots, exist_ok=True)
    parts = urllib.parse.urlsplit(a.dashboard)
    root = f"{parts.scheme}://{parts.netloc}"
    token = urllib.parse.parse_qs(parts.query)["token"][0]
    ro_root = a.read_only.rstrip("/")

    print("== requests without a browser: headers, 404s, refused actions")
    status, headers, _ = http("GET", root + "/")
    check(status == 200, "GET / answers 200")
    check("default-src 'none'" in headers.get("Content-Security-Policy", ""),
          "pages carry a Content-Security-Policy without scripts")
    check(headers.get("X-Frame-Options") == "DENY", "pages refuse frames (X-Frame-Options)")
    check(http("GET", root + "/queues/no-such-queue")[0] == 404, "a missing queue is a 404")
    check(http("GET", root + "/queues/emails/jobs/no-such-job")[0] == 404, "a missing job is a 404")
    check(http("GET", root + "/queues/emails/nonsense")[0] == 404, "a missing state is a 404")
    status = http("GET", root + "/", headers={"Host": "evil.example:80"})[0]
    check(status == 403, "a host name not given (DNS rebinding) is refused: 403")
    promote = root + "/queues/emails/jobs/later/promote"
    form = "application/x-www-form-urlencoded"
    status = http("POST", promote, "", {"Content-Type": form})[0]
    check(status == 403, "a POST without the token is refused: 403")
    status = http("POST", promote, "token=" + "0" * 32, {"Content-Type": form})[0]
    check(status == 403, "a POST with another token is refused: 403")
    status = http("POST", promote, "token=" + token,
                  {"Content-Type": form, "Origin": "http://evil.example"})[0]
    check(status == 403, "a POST with the token from a foreign Origin is refused: 403")
    status = http("POST", promote, "token=" + token,
                  {"Content-Type": form, "Sec-Fetch-Site": "cross-site"})[0]
    check(status == 403, "a POST with the token that the browser marks cross-site is refused: 403")
    check(job(a.bin, a.redis, "emails", "later")["state"] == "delayed",
          "after the refused POSTs the delayed job is still delayed (from Redis)")
    status, headers, _ = http("POST", promote, "token=" + token,
                              {"Content-Type": form, "Origin": root})
    check(status == 303 and headers["Location"].startswith("/queues/emails/jobs/later"),
          "the same POST with the token from this origin promotes: 303 back to the job")
    check(job(a.bin, a.redis, "emails", "later")["state"] == "waiting",
          "the promoted job is waiting (from Redis)")
    status = http("POST", ro_root + "/queues/emails/pause", "token=" + token,
                  {"Content-Type": form})[0]
    check(status == 403, "the read-only dashboard refuses a POST, even with a token: 403")

    driver, port = start_chromedriver()
    browser = None
    try:
        browser = Browser(port)
        shot = lambda name: browser.screenshot(os.path.join(a.shots, name + ".png"))

        print("== the browser: queue list, queue, dead jobs, the failed job, retry")
        browser.get(a.dashboard)
        check(browser.url().rstrip("/") == root, "the token URL sets its cookie and leaves the token out of the address bar")
        check("emails" in browser.text("#queues"), "the queue list shows the queue emails")
        check("{tenant:7}:reports" in browser.text("#queues"), "and the queue {tenant:7}:reports, paused")
        check(len(browser.finds("svg.chart rect.c")) > 0, "the last hour's chart shows completed minutes")
        shot("1-queues")
        browser.click('a.queue[href="/queues/emails"]')
        check("Queue emails" in browser.text("h1"), "the queue's page opens")
        check("metrics_minutes" in browser.text("#settings"), "it shows the queue's settings")
        check(len(browser.finds("#pause")) == 1, "it offers pause")
        schedules = browser.text("#schedules")
        check("nightly" in schedules and "<i>digest</i>" in schedules,
              "it lists the queue's schedule, its payload as text")
        shot("2-queue")
        browser.click('a[href="/queues/emails/dead"]')
        check("dead jobs" in browser.text("h1"), "the dead jobs' page opens")
        check(XSS in browser.text("#jobs"), "the dead job's payload shows as text in the list")
        shot("3-dead-jobs")
        browser.click('a.job[href="/queues/emails/jobs/xss"]')
        check(browser.text("#payload") == XSS, "the job's payload <script>alert(1)</script> shows as text")
        check(browser.text("#error") == XSS, "its error shows as text")
        check(XSS_LOG in browser.text("#logs"), "its log line <img …> shows as text")
        check(not browser.alert_open(), "no alert opened")
        check(browser.finds("script") == [] and browser.finds("img") == [],
              "no injected <script> or <img> element exists")
        check("&lt;script&gt;alert(1)&lt;/script&gt;" in browser.source(), "the page source holds it escaped")
        shot("4-failed-job")
        browser.click("#retry")
        browser.wait_for("#note")
        check("moved back to waiting" in browser.text("#note"), "retry answers on the job's page")
        state = job(a.bin, a.redis, "emails", "xss")["state"]
        check(state == "waiting", f"the job is waiting again (from Redis: {state})")
        check(browser.text("#state") == "waiting", "the job's page says waiting")
        shot("5-retried-job")
        browser.get(root + "/queues/emails/jobs/done-1")
        check(browser.text("#result") == "sent", "a completed job shows its result")
        shot("6-completed-job")
        browser.get(root + "/queues/emails/jobs/report")
        check(browser.text("#state") == "blocked" and "children not ended" in browser.text("#job"),
              "a flow's parent shows as blocked, with its children not ended")
        shot("7-flow-parent")
        browser.get(root + "/queues/no-such-queue")
        check("404" in browser.text("h1"), "a missing queue shows the 404 page")
        shot("8-not-found")

        print("== the read-only dashboard")
        browser.get(ro_root + "/queues/emails/jobs/xss")
        check(browser.text("#payload") == XSS, "it shows the job")
        check(browser.finds("form") == [] and browser.finds("button") == [], "it shows no action form")
        shot("9-read-only-job")
        browser.get(ro_root + "/queues/emails")
        check(browser.finds("form") == [], "nor on the queue's page")

        print("== the dashboard of a cluster")
        browser.get(a.cluster_dashboard)
        croot = urllib.parse.urlsplit(a.cluster_dashboard)
        croot = f"{croot.scheme}://{croot.netloc}"
        for name in ("emails", "{tenant:7}:reports", "other"):
            check(name in browser.text("#queues"), f"it lists the queue {name} (its primaries scanned)")
        shot("10-cluster-queues")
        browser.click('a.queue[href="/queues/%7Btenant%3A7%7D%3Areports"]')
        check("{tenant:7}:reports" in browser.text("h1"), "a queue whose name holds braces opens")
        browser.get(croot + "/queues/emails/jobs/xss")
        check(browser.text("#payload") == XSS, "a job opens on the cluster")
        shot("11-cluster-job")
        browser.click("#retry")
        browser.wait_for("#note")
        state = job(a.bin, a.cluster_redis, "emails", "xss", cluster=True)["state"]
        check(state == "waiting", f"retry works on the cluster (from Redis: {state})")
    finally:
        if browser is not None:
            browser.quit()
        driver.kill()
        driver.wait()
    print(f"screenshots: {a.shots}")
    print("dashboard.py: all checks passed")


if __name__ == "__main__":
    main()
