# Chorus gateway image.
#   build stage:   installs every dependency and compiles src/ into dist/ (scripts/build.cjs),
#                  the web page bundled, hashed and precompressed by esbuild (scripts/build-page.cjs)
#   runtime stage: dist/, production node_modules and the launcher only; runs as the "node" user
#
# docker build -t chorus .
# docker run -p 8787:8787 -e CHORUS_WEB_TOKEN=<long random string> -v chorus-data:/data chorus
#
# Inside a container the web feed listens on 0.0.0.0 (CHORUS_HOST), which Chorus refuses without
# a token: without CHORUS_WEB_TOKEN (or channels.web.auth_token) it exits with code 2 and says so.
# No config mounted → the built-in demo (three agents; canned replies without ANTHROPIC_API_KEY).
# Your own config: mount a folder with config.yaml (and optionally .env) at /config.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN node scripts/build.cjs && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
# CHORUS_* override the config file, so any mounted config listens where the container expects
# and keeps its data in the volume. UV_THREADPOOL_SIZE: log syncs of many groups share the pool.
ENV NODE_ENV=production \
    UV_THREADPOOL_SIZE=16 \
    CHORUS_HOST=0.0.0.0 \
    CHORUS_PORT=8787 \
    CHORUS_DATA_DIR=/data \
    CHORUS_LOG_FORMAT=json
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
RUN mkdir -p /data /config && chown node:node /data /config
USER node
# The working directory is where ./config.yaml and .env are looked for; empty → the demo.
WORKDIR /config
VOLUME ["/data"]
EXPOSE 8787
# /healthz needs no token; the slim image has no curl, so node asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CHORUS_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (docker stop): it finishes writes, logs "stopped", exits 0.
CMD ["node", "/app/bin/chorus.js", "start"]
