# Chorus gateway: multi-stage, non-root, data/ as a volume, config by mount and environment.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    CHORUS_CONFIG=/config/config.yaml
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
RUN mkdir -p /app/data /config && chown -R node:node /app/data /config
USER node
VOLUME ["/app/data"]
EXPOSE 8787
# Mount your config at /config/config.yaml (set data_dir: /app/data and channels.web.auth_token,
# since a container listens beyond loopback). Secrets come from the environment via ${VAR}.
CMD ["node", "bin/chorus.js", "start"]
