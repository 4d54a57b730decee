package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
)

type apiError struct {
	Error string `json:"error"`
	Seq   uint64 `json:"seq,omitempty"`
}

func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		code, msg := http.StatusInternalServerError, "internal error"
		var he *echo.HTTPError
		if errors.As(err, &he) {
			code = he.Code
			msg = fmt.Sprint(he.Message)
		} else {
			log.Error("request failed", "path", c.Path(), "err", err)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(code)
			return
		}
		_ = c.JSON(code, apiError{Error: msg})
	}
}

func healthz(c echo.Context) error { return c.String(http.StatusOK, "ok\n") }

func readyz(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !eng.Ready() {
			return c.String(http.StatusServiceUnavailable, "haproxy not in step yet\n")
		}
		return c.String(http.StatusOK, "ok\n")
	}
}

func snapshot(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error { return c.JSON(http.StatusOK, eng.Snapshot()) }
}

// scaleRequest is the body of POST /api/v1/scale.
type scaleRequest struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas"`
	// ExpectSeq is the snapshot seq a preview was computed at; 0 skips the check.
	ExpectSeq uint64 `json:"expectSeq"`
}

// maxReplicas keeps a typo from asking for a million pods.
const maxReplicas = 1000

func (r scaleRequest) validate() error {
	if err := dcm.ValidateDNSLabel("namespace", r.Namespace); err != nil {
		return err
	}
	if err := dcm.ValidateDNSSubdomain("name", r.Name); err != nil {
		return err
	}
	switch strings.ToLower(r.Kind) {
	case "deployment", "statefulset":
	default:
		return fmt.Errorf("kind %q: want Deployment or StatefulSet", r.Kind)
	}
	if r.Replicas == nil || *r.Replicas < 0 || *r.Replicas > maxReplicas {
		return fmt.Errorf("replicas must be between 0 and %d", maxReplicas)
	}
	return nil
}

func scale(eng Engine, scaler Scaler, log *slog.Logger) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req scaleRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body must be JSON: "+err.Error())
		}
		if err := req.validate(); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		if req.ExpectSeq != 0 {
			if seq := eng.Snapshot().Seq; seq != req.ExpectSeq {
				return c.JSON(http.StatusConflict, apiError{Error: "the state moved since the preview; preview again", Seq: seq})
			}
		}
		if err := scaler.SetScale(c.Request().Context(), req.Namespace, req.Kind, req.Name, *req.Replicas); err != nil {
			log.Warn("scale failed", "namespace", req.Namespace, "kind", req.Kind, "name", req.Name, "err", err)
			return echo.NewHTTPError(http.StatusBadGateway, err.Error())
		}
		actor, _ := c.Get(actorKey).(string)
		obj := dcm.ObjectRef{Kind: req.Kind, Namespace: req.Namespace, Name: req.Name}
		eng.Action(actor, fmt.Sprintf("scaled %s to %d", obj, *req.Replicas), obj)
		return c.JSON(http.StatusAccepted, map[string]any{"namespace": req.Namespace, "kind": req.Kind, "name": req.Name, "replicas": *req.Replicas})
	}
}
