package main

import (
	_ "github.com/labstack/echo/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/pflag"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/api/discovery/v1"
	_ "k8s.io/api/networking/v1"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/api/autoscaling/v1"
	_ "k8s.io/client-go/testing"
	_ "github.com/labstack/echo/v4/middleware"
)

func main() {}
