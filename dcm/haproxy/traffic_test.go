package haproxy

import "testing"

func TestParseTraffic(t *testing.T) {
	// The columns dcm reads, in another order than 2.6's and among
	// others, as a later version may print them.
	const head = "# pxname,svname,qcur,x,stot,bin,bout,econ,eresp,type,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,req_tot,qtime,ctime,rtime,ttime\n"
	text := head +
		"fe_http,FRONTEND,,,9,1,1,,,0,0,9,0,0,0,0,9,,,,\n" +
		"be_http:shop:web,BACKEND,2,,7,100,200,1,2,1,0,5,0,1,1,0,7,0,1,3,5\n" +
		"be_http:shop:web,pod-a:http,0,,7,100,200,1,2,2,0,5,0,1,1,0,7,0,1,3,5\n" +
		"be_tcp:shop:db,BACKEND,0,,4,10,20,0,0,1,,,,,,,,0,0,0,9\n" +
		"be_default,BACKEND,0,,3,1,1,0,0,1,0,0,0,0,3,0,3,0,0,0,0\n"
	rows, err := ParseTraffic(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the two backends and the server of dcm's: %+v", len(rows), rows)
	}
	web, srv, db := rows[0], rows[1], rows[2]
	if web.Proxy != "be_http:shop:web" || web.Server != "" || web.Requests != 7 || web.Responses != [6]uint64{0, 5, 0, 1, 1, 0} ||
		web.BytesIn != 100 || web.BytesOut != 200 || web.ConnErrors != 1 || web.RespErrors != 2 || web.Queue != 2 || web.Times != [4]int{0, 1, 3, 5} {
		t.Errorf("backend row %+v", web)
	}
	if srv.Server != "pod-a:http" || srv.Requests != 7 {
		t.Errorf("server row %+v", srv)
	}
	// A TCP backend leaves the HTTP columns empty: zero, not an error.
	if db.Requests != 0 || db.Sessions != 4 || db.Times[3] != 9 {
		t.Errorf("tcp row %+v", db)
	}
	if _, err := ParseTraffic(head + "be_http:a:b,BACKEND,x,,1,1,1,0,0,1,0,0,0,0,0,0,1,0,0,0,0\n"); err == nil {
		t.Error("a qcur of x parsed")
	}
	if _, err := ParseTraffic("# pxname,svname,type\n"); err == nil {
		t.Error("a header without the counters parsed")
	}
}
