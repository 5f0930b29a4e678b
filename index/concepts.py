"""Developer concepts: words a developer uses interchangeably, for expanding a query.

A curated thesaurus of general software vocabulary (platforms, version control, package
managers, build, deploy, test and CI words, errors, databases, cloud, editors), written from
general knowledge, not from any vault: "mac" is also "macOS", "darwin" and "Apple Silicon";
"revert" is also "rollback"; "download" is also "install". Each line is one group of
equivalent words, phrases or joined forms, separated by commas; `related` reads a query's
terms and returns the terms of the other members of every group the query names. Recall
searches them below the query's own words (docs/retrieval.md step 3).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from .query import terms

SHORTEST_PART = 4  # a phrase's shorter words are not searched on their own

# One group a line. A member of several words names the group when the query holds all of
# its terms; it expands into each of its terms. Groups are equivalences, not topics: "redis"
# and "cache" are two groups, since a cache need not be Redis. A word whose everyday sense is
# another ("live", "page", "black", "spot", "pat") is no member: "the cache lives in redis" is
# not about production, nor "the settings page" about alerting.
_GROUPS = """
mac, macos, osx, os x, darwin, macbook, apple silicon, m1, m2, m3
linux, ubuntu, debian, fedora, centos, rhel, gnu/linux
windows, win32, win64, win10, win11, wsl
arm64, aarch64, armv8
amd64, x86_64, x86-64, x64
ios, iphone, ipad, ipados
android, apk, aab
revert, rollback, roll back, roll-back, undo, back out, backout
commit, commits, changeset
pull request, pr, merge request, mr
main branch, master, trunk, default branch
cherry-pick, cherry pick, backport
force push, force-push, push --force
stash, shelve
merge conflict, conflict, conflicts
repo, repository, repositories
monorepo, mono repo, mono-repo, turborepo, nx, lerna
submodule, subtree
download, downloads, install, installs, installation, reinstall, reinstalled
uninstall, purge
upgrade, update, bump
downgrade, pin, pinned
dependency, dependencies, deps, package, packages, library, libraries, lib, node_modules, module, modules
npm, pnpm, yarn
pip, pip3, poetry, pipenv
lockfile, lock file, package-lock.json, yarn.lock, pnpm-lock.yaml, poetry.lock, cargo.lock, go.sum, uv.lock
homebrew, brew
apt, apt-get, dpkg
gem, gems, bundler, gemfile
cargo, crate, crates
ci, continuous integration, pipeline, pipelines, github actions, gh actions, gitlab ci, jenkins, circleci, travis, buildkite, workflow, workflows
runner, runners, build agent, build machine
deploy, deploys, deployed, deployment, deployments, release, releases, ship, rollout, roll out, redeploy
production, prod
staging, stage, preprod, pre-prod, uat
development, dev
build, builds, compile, compilation, rebuild
test, tests, testing, spec, specs
unit test, unit tests, unittest
e2e, end-to-end, end to end, cypress, playwright, selenium
flaky, flake, flakiness, intermittent, intermittently, randomly, nondeterministic, sporadic
lint, linter, linting, eslint, flake8, pylint, rubocop
formatter, formatting, prettier, gofmt, rustfmt
typecheck, type check, type checking, mypy, tsc, pyright
mock, mocks, mocking, stub, stubs, fake, fakes, test double
fixture, fixtures, seed data, test data
coverage, code coverage
benchmark, benchmarks, load test, load testing, stress test, k6, locust, jmeter
container, containers, docker, docker image, containerized, oci
dockerfile, containerfile
docker compose, docker-compose, compose
registry, container registry, ecr, gcr, ghcr, docker hub, artifact registry
kubernetes, k8s, kube, eks, gke, aks, openshift, cluster
kubectl, k9s
helm, helm chart, chart, charts
configmap, config map
pvc, persistent volume, volume mount
node pool, nodepool, node group, worker nodes
argocd, argo cd, flux, gitops
terraform, tofu, opentofu, iac, infrastructure as code, hcl, pulumi
ansible, playbook, playbooks, chef, puppet
crash, crashes, crashed, crashing, crashloop, crashloopbackoff, panic, panics, panicked, segfault, segmentation fault, sigsegv, core dump
start, starts, startup, boot, boots, launch, launches, spin up
restart, restarts, reboot, bounce
shutdown, shut down, graceful shutdown
kill, killed, sigkill, sigterm, terminated, exit code 137
error, errors, exception, exceptions
traceback, stack trace, stacktrace, backtrace
broken, broke, busted, borked, breaks
timeout, timeouts, timed out, time out, deadline exceeded, etimedout
hang, hangs, hung, stuck, freeze, freezes, frozen, unresponsive
slow, slowly, slowness, sluggish, latency, laggy, takes forever
faster, speed, speed up, optimize, optimise, optimization, accelerate
memory, ram, heap
oom, out of memory, oomkilled, oom killer
memory leak, leak, leaks, leaking
disk, disks, disk space, storage, no space left, enospc
cpu, cpus, processor, cores
connection refused, econnrefused, can't connect, cannot connect, unreachable
permission, permissions, permission denied, access denied, forbidden, eacces, eperm, 403
unauthorized, unauthenticated, 401
auth, authentication, authenticate, login, log in, logins, sign in, signin, sso, logon
logout, log out, sign out, signout
signup, sign up, register, registration
password, passwords, passwd, passphrase
credentials, creds, secret, secrets, api key, api keys, access key
token, tokens, jwt, bearer token, access token
session, sessions, cookie, cookies
email, emails, e-mail, mail, mails, smtp
notification, notifications, notify, push notification, push notifications, apns, fcm
config, configs, configuration, configure, settings, setting, conf, cfg
env var, env vars, environment variable, environment variables, dotenv, .env
environment, environments, env
log, logs, logging, logger
metrics, monitoring, observability, dashboard, dashboards, grafana, datadog, prometheus
alert, alerts, alerting, pagerduty, opsgenie
tracing, traces, opentelemetry, otel, jaeger
error tracking, sentry, bugsnag, rollbar, crashlytics
database, databases, db, dbs, datastore
postgres, postgresql, psql, pg
mysql, mariadb
sqlite, sqlite3
mongo, mongodb
redis, valkey, keydb, memorystore, elasticache
cache, caches, caching, cached, memoize, memcached
migration, migrations, migrate, schema change, schema migration
orm, prisma, sqlalchemy, activerecord, typeorm, sequelize, hibernate, gorm
backup, backups, back up, snapshot, snapshots, pg_dump, dump
restore, restored, recover, recovery
queue, queues, message queue, broker, rabbitmq, sqs, pubsub, pub/sub, kafka, nats
worker, workers, background job, background jobs, background task, celery, sidekiq, bullmq, resque
cron, cronjob, cron job, crontab, scheduled job, scheduler
api, apis, endpoint, endpoints, route, routes, rest api
webhook, webhooks, web hook, callback url
graphql, gql
grpc, protobuf, proto
url, urls, link, links, uri
tls, ssl, https, certificate, certificates, cert, certs, x509
dns, nameserver, resolver, cname
domain, domains, hostname, hostnames, subdomain
load balancer, load balancers, alb, elb, nlb
proxy, reverse proxy, nginx, haproxy, traefik, envoy, caddy, ingress
cdn, cloudfront, fastly, cloudflare, akamai
firewall, security group, waf, iptables
vpn, wireguard, tailscale
server, servers, host, hosts, machine, vm, vms, virtual machine, instance, instances, ec2, droplet
serverless, lambda, cloud function, cloud functions, cloud run
aws, amazon web services
gcp, google cloud
azure, microsoft azure, azure cloud
s3, bucket, buckets, object storage, gcs, blob storage
iam, service account, role, roles
secrets manager, hashicorp vault, sops, sealed secrets, parameter store, ssm
editor, ide, vscode, vs code, visual studio code, intellij, jetbrains, pycharm, webstorm, goland, vim, neovim, nvim, emacs, sublime
terminal, shell, console, command line, bash, zsh, tty
debug, debugger, debugging, breakpoint, breakpoints, pdb, gdb, lldb, delve
profiler, profiling, profile, flamegraph, flame graph, pprof, py-spy
javascript, js, ecmascript, es6
typescript, ts
node, nodejs, node.js
python, python3, cpython
golang, go
rust, rustc
java, jvm, jdk, openjdk
react, reactjs
nextjs, next.js
react native, expo
flutter, dart
rails, ruby on rails
django, drf, django rest framework
regex, regexp, regular expression, regular expressions
float, floats, floating point, double
decimal, decimals, numeric, bigdecimal
timezone, timezones, time zone, tz, utc, dst, daylight saving
date, dates, datetime, timestamp, timestamps
null, nil, undefined, null pointer, npe, nullpointerexception
async, asynchronous, await, promise, promises, coroutine, coroutines
concurrency, concurrent, parallel, parallelism, multithreaded, threads, threading
race condition, race conditions, data race
deadlock, deadlocks, lock contention
retry, retries, retried, backoff, exponential backoff
rate limit, rate limits, rate limiting, ratelimit, throttle, throttling, throttled, 429, too many requests
upload, uploads, uploading, uploaded, multipart
image, images, picture, pictures, photo, photos, img, thumbnail
folder, folders, directory, directories, dir
delete, deletes, deleted, deleting, rm, erase, wipe, purge
rename, renamed, mv
search, searching, full-text, full text search, fts
pagination, paginate, paging
payment, payments, billing, charge, charges, stripe, braintree, paypal, adyen
invoice, invoices, receipt, receipts
cart, basket, shopping cart
discount, discounts, coupon, coupons, promo code, voucher
translation, translations, i18n, localization, localisation, l10n, locale, internationalization
accessibility, a11y
documentation, docs, readme, wiki
bug, bugs, defect, defects
hotfix, hotfixes, bugfix, patch release
refactor, refactoring, restructure
cleanup, clean up, prune, housekeeping
feature flag, feature flags, feature toggle, feature toggles, launchdarkly, unleash
experiment, a/b test, ab test, split test
analytics, tracking, telemetry, mixpanel, amplitude
localhost, 127.0.0.1, locally
hot reload, hot reloading, hmr, live reload, fast refresh
dev server, development server, devserver
encryption, encrypt, encrypted, kms
checksum, checksums, digest, sha256, hash mismatch
compression, compress, gzip, brotli
cors, cross-origin, preflight
csrf, xsrf
vulnerability, vulnerabilities, cve, security advisory
code review, review, reviews, reviewer
frontend, front-end, front end, client-side, client side
backend, back-end, back end, server-side, server side
css, stylesheet, stylesheets, tailwind, scss, sass
validation, validate, validator, zod, pydantic
serialize, serialization, serializer, marshal, marshalling
parse, parsing, parser, deserialize, unmarshal
encoding, utf-8, utf8, charset, unicode
csv, spreadsheet, excel, xlsx
import, ingest, ingestion
etl, elt, data pipeline, data pipelines
warehouse, data warehouse, snowflake, bigquery, redshift
spark, pyspark, databricks
notebook, notebooks, jupyter, ipynb
airflow, dag, dags
gpu, gpus, cuda
embedding, embeddings, vector, vectors
llm, llms, large language model, gpt
dependency injection, di
changelog, change log, release notes
semver, semantic versioning
setup, set up, getting started, onboarding, bootstrap
health check, health checks, healthcheck, liveness probe, readiness probe, probe, probes, healthz
outage, outages, downtime, incident, incidents
postmortem, post-mortem, incident review, rca, root cause
on-call, on call, oncall, pager
autoscaling, autoscaler, hpa, scale out, horizontal scaling
replica, replicas, replication, read replica
failover, fail over, switchover
sharding, shard, shards, partition, partitioning
transaction, transactions, atomic
lock, locks, mutex, locking
connection pool, pool, pooling, pgbouncer, pool size
n+1, eager loading, eager load, select_related, prefetch_related
query plan, explain analyze, seq scan, sequential scan
uuid, uuids, guid, ulid
git hook, git hooks, pre-commit, pre-push, husky, lefthook
ssh, openssh, ssh key, ssh keys, deploy key
personal access token, github token
makefile, make target, justfile, taskfile
emulator, simulator, avd
browser, browsers, chrome, chromium, firefox, safari
app store, testflight, play store, google play
code signing, codesign, signing, provisioning profile, keystore
spot instance, spot instances, preemptible
cost, costs, spend, spending, expensive
region, regions, availability zone, zone
throughput, qps, rps, requests per second
realtime, real-time, websocket, websockets, socket.io, server-sent events, sse
polling, long polling
sms, text message, twilio
email provider, sendgrid, mailgun, ses, postmark
413, payload too large, entity too large
502, bad gateway
503, service unavailable
504, gateway timeout
500, internal server error
rebuild, rebuilt, build again
rerun, re-run, run again
retry, try again
redeploy, deploy again
reindex, index again
resync, sync again
reconnect, connect again
"""


@functools.cache
def _table() -> Mapping[str, tuple[tuple[frozenset[str], int], ...]]:
    """Return each member's first term -> (member's terms, group number) of every group."""
    table: dict[str, list[tuple[frozenset[str], int]]] = {}
    for number in range(group_count()):
        for member in _members(number):
            table.setdefault(min(member), []).append((member, number))
    return {term: tuple(found) for term, found in table.items()}


@functools.cache
def _lines() -> tuple[str, ...]:
    return tuple(line for line in _GROUPS.splitlines() if line.strip())


@functools.cache
def _members(number: int) -> tuple[frozenset[str], ...]:
    line = _lines()[number]
    found = (frozenset(terms(word)) for word in line.split(","))
    return tuple(dict.fromkeys(m for m in found if m))


def group_count() -> int:
    """Return how many groups of equivalent words the thesaurus holds."""
    return len(_lines())


def related(query_terms: Iterable[str]) -> dict[str, frozenset[str]]:
    """Return the terms of the concepts `query_terms` name that the query does not hold,
    each with the query terms that named it (a member of several words is named when the
    query holds all of them)."""
    held = set(query_terms)
    table = _table()
    found: dict[str, set[str]] = {}
    for term in held:
        for member, number in table.get(term, ()):
            if not member <= held:
                continue
            for other in _members(number):
                for extra in other - held:
                    if len(other) > 1 and len(extra) < SHORTEST_PART:
                        continue  # "os x", "roll out": a phrase's particles say little
                    found.setdefault(extra, set()).update(member)
    return {term: frozenset(sources) for term, sources in found.items()}
