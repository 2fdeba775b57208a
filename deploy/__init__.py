"""Serving the app: several processes behind nginx (deploy/serve.py, deploy/nginx.conf.template)."""
