package tool

func (t *Tool) runDump(args []string) int      { return 2 }
func (t *Tool) runLSM(args []string) int       { return 2 }
func (t *Tool) runScan(args []string) int      { return 2 }
func (t *Tool) runGet(args []string) int       { return 2 }
func (t *Tool) runGC(args []string) int        { return 2 }
