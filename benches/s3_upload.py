"""Copies a local lake's raw tables into an S3 bucket (creating it), file for file, for the
scale figures (benches/scale_figures.sh). Uses boto3, which moto's server brings along.

    s3_upload.py ENDPOINT BUCKET PREFIX LAKE_DIR TABLE...
"""
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3

endpoint, bucket, prefix, lake, *tables = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                  aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
s3.create_bucket(Bucket=bucket)
files = [os.path.join(d, f) for t in tables for d, _, fs in os.walk(os.path.join(lake, t)) for f in fs]
t0 = time.time()


def put(path):
    key = f"{prefix}/{os.path.relpath(path, lake)}"
    s3.upload_file(path, bucket, key)
    return os.path.getsize(path)


with ThreadPoolExecutor(8) as pool:
    total = sum(pool.map(put, files))
print(f"uploaded {len(files)} files, {total / 1e9:.2f} GB in {time.time() - t0:.0f} s")
