#!/bin/sh
# Stand-in for the README's ./deploy.sh: the first two attempts lose their connection,
# the third deploys; any argument is a usage error (sysexits' 64), as a real script's
# unknown option would be. retry sets RETRY_ATTEMPT (1 outside retry).
if [ "$#" -gt 0 ]; then
    echo "usage: deploy.sh [--env ENV]" >&2
    exit 64
fi
if [ "${RETRY_ATTEMPT:-1}" -lt 3 ]; then
    echo "deploy: connection reset by peer" >&2
    exit 1
fi
echo "deployed"
