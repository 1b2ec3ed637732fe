#!/bin/sh
# Rebuilds the dashboard's vendored uPlot from the pinned npm package (package-lock.json):
# copies the minified bundle, its stylesheet and its licence next to the dashboard's own
# assets. Only needed to upgrade uPlot: the copies are committed, so `cargo build` needs
# neither npm nor the network. Usage: sh src/dashboard/assets/vendor/build.sh
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --ignore-scripts
cp node_modules/uplot/dist/uPlot.iife.min.js ../uplot.min.js
cp node_modules/uplot/dist/uPlot.min.css ../uplot.min.css
cp node_modules/uplot/LICENSE ../uplot.LICENSE
rm -rf node_modules
echo "uPlot $(node -p "require('./package-lock.json').packages['node_modules/uplot'].version") copied into $(cd .. && pwd)"
