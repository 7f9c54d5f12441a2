"""The whole loop, end to end, on the product's own services (``manage.py bench_loop``)."""
