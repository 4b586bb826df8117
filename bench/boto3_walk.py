"""The fleet walk as a user would script it with boto3: every call in turn, no concurrency.

Reads what gpushare's fleet snapshot reads - clusters, container instances, tasks, task
definitions (each once), services with their tags, and the GPU metrics - and prints one JSON
line: {"seconds": ..., "calls": ..., "gpus": ..., "tasks": ...}.

Usage: python boto3_walk.py ENDPOINT_URL
"""

import datetime
import json
import sys
import time

import boto3
from botocore.config import Config


def main(endpoint):
    session = boto3.session.Session(
        aws_access_key_id="emulator", aws_secret_access_key="emulator", region_name="us-east-1"
    )
    config = Config(retries={"max_attempts": 2, "mode": "standard"})
    ecs = session.client("ecs", endpoint_url=endpoint, config=config)
    cloudwatch = session.client("cloudwatch", endpoint_url=endpoint, config=config)
    calls = 0
    gpus = 0
    tasks_seen = 0
    definitions = {}
    started = time.monotonic()

    def pages(method, key, **kwargs):
        nonlocal calls
        token = None
        while True:
            args = dict(kwargs)
            if token:
                args["nextToken"] = token
            page = method(**args)
            calls += 1
            yield page[key]
            token = page.get("nextToken")
            if not token:
                return

    clusters = [arn for page in pages(ecs.list_clusters, "clusterArns") for arn in page]
    for cluster in clusters:
        for arns in pages(ecs.list_container_instances, "containerInstanceArns", cluster=cluster, maxResults=100):
            for i in range(0, len(arns), 100):
                out = ecs.describe_container_instances(cluster=cluster, containerInstances=arns[i : i + 100])
                calls += 1
                for instance in out["containerInstances"]:
                    gpus += len(instance.get("gpuDevices") or [])
        for arns in pages(ecs.list_tasks, "taskArns", cluster=cluster, maxResults=100):
            for i in range(0, len(arns), 100):
                out = ecs.describe_tasks(cluster=cluster, tasks=arns[i : i + 100])
                calls += 1
                for task in out["tasks"]:
                    tasks_seen += 1
                    arn = task["taskDefinitionArn"]
                    if arn not in definitions:
                        definitions[arn] = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
                        calls += 1
        for arns in pages(ecs.list_services, "serviceArns", cluster=cluster, maxResults=100):
            for i in range(0, len(arns), 10):
                ecs.describe_services(cluster=cluster, services=arns[i : i + 10], include=["TAGS"])
                calls += 1

    metrics = []
    token = None
    while True:
        args = {"Namespace": "CWAgent", "MetricName": "nvidia_smi_utilization_gpu"}
        if token:
            args["NextToken"] = token
        page = cloudwatch.list_metrics(**args)
        calls += 1
        metrics.extend(page["Metrics"])
        token = page.get("NextToken")
        if not token:
            break
    queries = []
    for n, metric in enumerate(metrics):
        for prefix, name in (("u", "nvidia_smi_utilization_gpu"), ("m", "nvidia_smi_memory_used")):
            queries.append(
                {
                    "Id": f"{prefix}{n}",
                    "MetricStat": {
                        "Metric": {"Namespace": "CWAgent", "MetricName": name, "Dimensions": metric["Dimensions"]},
                        "Period": 60,
                        "Stat": "Average",
                    },
                }
            )
    end = datetime.datetime.now(datetime.timezone.utc)
    start = end - datetime.timedelta(minutes=15)
    for i in range(0, len(queries), 500):
        cloudwatch.get_metric_data(MetricDataQueries=queries[i : i + 500], StartTime=start, EndTime=end)
        calls += 1

    seconds = time.monotonic() - started
    print(json.dumps({"seconds": seconds, "calls": calls, "gpus": gpus, "tasks": tasks_seen}))


if __name__ == "__main__":
    main(sys.argv[1])
